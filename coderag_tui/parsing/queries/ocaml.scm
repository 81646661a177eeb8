; OCaml tag query (see README.md for the captures)

; ---- values: top-level and module-level `let` (a local `let ... in` is no unit)
(compilation_unit (value_definition (let_binding pattern: (value_name) @name (parameter)+ @param) @definition.function))
(compilation_unit (value_definition (let_binding pattern: (value_name) @name body: (fun_expression)) @definition.function))
(compilation_unit (value_definition (let_binding pattern: (value_name) @name body: (function_expression)) @definition.function))
(compilation_unit (value_definition (let_binding pattern: (value_name) @name) @definition.constant))
(structure (value_definition (let_binding pattern: (value_name) @name (parameter)+ @param) @definition.function))
(structure (value_definition (let_binding pattern: (value_name) @name body: (fun_expression)) @definition.function))
(structure (value_definition (let_binding pattern: (value_name) @name body: (function_expression)) @definition.function))
(structure (value_definition (let_binding pattern: (value_name) @name) @definition.constant))
(external (value_name) @name) @definition.function
(value_specification (value_name) @name) @definition.signature

; ---- types, modules, classes
(type_definition (type_binding name: (type_constructor) @name) @definition.type)
(module_definition (module_binding (module_name) @name) @definition.module)
(module_type_definition (module_type_name) @name) @definition.interface
(class_definition (class_binding (class_name) @name) @definition.class)
(method_definition (method_name) @name) @definition.method

; ---- calls: `f x y` is one application; arguments have no list node
(application_expression function: (value_path (module_path) @call.receiver (value_name) @call.name)) @call
(application_expression function: (value_path (value_name) @call.name)) @call

; ---- imports: `open M`
(open_module module: (module_path) @import.module) @import
