"""Reports: pure functions from a `Result` to text (JSON, terminal, Markdown, HTML, JUnit), and
from a class's `ClassReport` to the instructor's page (`classpage`)."""
