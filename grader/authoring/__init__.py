"""Authoring an assignment: from one master notebook to every file, released and validated."""
