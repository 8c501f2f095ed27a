"""Where an assignment's files live: `grader.spec.layout.Layout`, the one definition, named
here too for the callers that import it from authoring."""

from grader.spec.layout import Layout

__all__ = ["Layout"]
