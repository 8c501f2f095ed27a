"""The class report: `grade gradebook report`, what a class got wrong, from the gradebook alone.

`stats` computes it (with the class's own `mistakes` told apart from advice, and the
`cellerrors` several students hit); `page` renders it as HTML, Markdown and JSON, and
`charts` lays out its bar charts.
"""
