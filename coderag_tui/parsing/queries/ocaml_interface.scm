; OCaml interface (.mli) tag query (see README.md for the captures): what a module exposes

(value_specification (value_name) @name) @definition.signature
(external (value_name) @name) @definition.function
(type_definition (type_binding name: (type_constructor) @name) @definition.type)
(module_type_definition (module_type_name) @name) @definition.interface
(open_module module: (module_path) @import.module) @import
