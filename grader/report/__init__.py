"""Reports: pure functions from a `Result` to text (JSON, terminal, Markdown, HTML, JUnit)."""
