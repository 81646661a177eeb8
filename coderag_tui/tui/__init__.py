"""The terminal app (Textual). Nothing outside this package imports textual.

Entry point: `coderag_tui.tui.app.run_app(service)`; tests build the app with
`coderag_tui.tui.app.create_app(service, ...)`.
"""
