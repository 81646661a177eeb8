; Bash tag query (see README.md for the captures)

; ---- functions: `name() { }` and `function name { }` (no declared parameters in shell)
(function_definition name: (word) @name) @definition.function

; ---- calls: every simple command; arguments have no list node, so no argument count
(command name: (command_name (word) @call.name)) @call

; ---- imports: `source file` and `. file`
((command name: (command_name (word) @_source) argument: (_) @import.module) @import
 (#any-of? @_source "source" "."))
