; Haskell tag query (see README.md for the captures)

; ---- definitions: each equation of a function is its own node (one unit per equation)
(function name: (variable) @name patterns: (patterns) @params) @definition.function
(function name: (variable) @name) @definition.function
(bind name: (variable) @name) @definition.constant
(class_declarations (signature name: (variable) @name) @definition.method)
(data_type name: (name) @name) @definition.type
(newtype name: (name) @name) @definition.type
(type_synomym name: (name) @name) @definition.type
; a type class declares its methods' signatures: an interface; an instance implements them
(class name: (name) @name) @definition.interface
(instance name: (name) @name) @definition.impl

; ---- calls: the innermost application names the function (`f x y` is `(f x) y`)
(apply function: (variable) @call.name) @call
(apply function: (qualified module: (module) @call.receiver id: (variable) @call.name)) @call

; ---- imports
(import module: (module) @import.module) @import
(import module: (module) @import.module names: (import_list (import_name (variable) @import.name))) @import
