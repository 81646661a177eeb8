; Python tag query (see README.md for the captures)

(class_definition name: (identifier) @name) @definition.class
(class_definition superclasses: (argument_list) @bases) @definition.class
(class_definition body: (block . (string) @doc)) @definition.class

(function_definition name: (identifier) @name parameters: (parameters) @params) @definition.function
(function_definition return_type: (_) @return) @definition.function
(function_definition body: (block . (string) @doc)) @definition.function

(decorated_definition (decorator) @decorator definition: (function_definition) @definition.function)
(decorated_definition (decorator) @decorator definition: (class_definition) @definition.class)

(module (assignment left: (identifier) @name) @definition.constant
  (#match? @name "^[A-Z][A-Z0-9_]+$"))

(call function: (identifier) @call.name arguments: (_) @call.args) @call
(call function: (attribute object: (_) @call.receiver attribute: (identifier) @call.name)
  arguments: (_) @call.args) @call

; `import a, b` is two imports: the dotted name is the @import node
(import_statement name: (dotted_name) @import.module @import)
(import_statement name: (aliased_import name: (dotted_name) @import.module) @import)
(import_from_statement module_name: (_) @import.module name: (dotted_name) @import.name) @import
(import_from_statement module_name: (_) @import.module
  name: (aliased_import name: (dotted_name) @import.name)) @import
(import_from_statement module_name: (_) @import.module (wildcard_import)) @import
