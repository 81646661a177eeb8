; Go tag query (see README.md for the captures)

; ---- types: structs (embedded fields are bases), interfaces (embedded interfaces are bases), others
(type_spec name: (type_identifier) @name type: (struct_type)) @definition.struct
(type_spec type: (struct_type (field_declaration_list
  (field_declaration !name type: [(type_identifier) (qualified_type)] @base)))) @definition.struct
(type_spec type: (struct_type (field_declaration_list
  (field_declaration !name type: (pointer_type (_) @base))))) @definition.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @definition.interface
(type_spec type: (interface_type (type_elem . [(type_identifier) (qualified_type)] @base .))) @definition.interface
(type_spec name: (type_identifier) @name
  type: [(type_identifier) (qualified_type) (pointer_type) (function_type) (map_type)
         (slice_type) (array_type) (channel_type) (generic_type)]) @definition.type
(type_alias name: (type_identifier) @name) @definition.type

; ---- interface methods
(method_elem name: (field_identifier) @name parameters: (parameter_list) @params) @definition.method
(method_elem result: (_) @return) @definition.method

; ---- functions and methods (the receiver type is the scope: Store.Get)
(function_declaration name: (identifier) @name parameters: (parameter_list) @params) @definition.function
(function_declaration result: (_) @return) @definition.function
(method_declaration name: (field_identifier) @name parameters: (parameter_list) @params) @definition.method
(method_declaration result: (_) @return) @definition.method
(method_declaration receiver: (parameter_list (parameter_declaration type: [
  (type_identifier) @scope
  (pointer_type (type_identifier) @scope)
  (generic_type type: (type_identifier) @scope)
  (pointer_type (generic_type type: (type_identifier) @scope))]))) @definition.method

; ---- exported package-level constants
(source_file (const_declaration (const_spec name: (identifier) @name) @definition.constant)
  (#match? @name "^[A-Z]"))

; ---- calls
(call_expression function: (identifier) @call.name arguments: (argument_list) @call.args) @call
(call_expression
  function: (selector_expression operand: (_) @call.receiver field: (field_identifier) @call.name)
  arguments: (argument_list) @call.args) @call

; ---- imports: one per import spec; an alias is the name it brings in
(import_spec path: (interpreted_string_literal (interpreted_string_literal_content) @import.module)) @import
(import_spec name: (package_identifier) @import.name) @import
