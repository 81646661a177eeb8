; PHP tag query (see README.md for the captures)

; ---- namespaces (braced), classes, interfaces, traits, enums; used traits are bases
(namespace_definition name: (_) @name body: (compound_statement)) @definition.namespace
(class_declaration name: (name) @name) @definition.class
(class_declaration (base_clause) @bases) @definition.class
(class_declaration (class_interface_clause) @bases) @definition.class
(class_declaration body: (declaration_list (use_declaration [(name) (qualified_name)] @base))) @definition.class
(class_declaration attributes: (attribute_list) @decorator) @definition.class
(interface_declaration name: (name) @name) @definition.interface
(interface_declaration (base_clause) @bases) @definition.interface
(trait_declaration name: (name) @name) @definition.trait
(enum_declaration name: (name) @name) @definition.enum
(enum_declaration (class_interface_clause) @bases) @definition.enum

; ---- methods and functions
(method_declaration name: (name) @name parameters: (formal_parameters) @params) @definition.method
(method_declaration return_type: (_) @return) @definition.method
(method_declaration attributes: (attribute_list) @decorator) @definition.method
(function_definition name: (name) @name parameters: (formal_parameters) @params) @definition.function
(function_definition return_type: (_) @return) @definition.function
(function_definition attributes: (attribute_list) @decorator) @definition.function

; ---- calls: f(x), $o->f(x), $o?->f(x), C::f(x), new C(x)
(function_call_expression function: [(name) @call.name (qualified_name (name) @call.name .)]
  arguments: (arguments) @call.args) @call
(member_call_expression object: (_) @call.receiver name: (name) @call.name arguments: (arguments) @call.args) @call
(nullsafe_member_call_expression object: (_) @call.receiver name: (name) @call.name arguments: (arguments) @call.args) @call
(scoped_call_expression scope: (_) @call.receiver name: (name) @call.name arguments: (arguments) @call.args) @call
(object_creation_expression [(name) @call.name (qualified_name (name) @call.name .)] (arguments) @call.args) @call

; ---- imports: `use` clauses (module = the namespace, names = the imported symbols), require/include
(namespace_use_declaration (namespace_use_clause
  (qualified_name prefix: (namespace_name) @import.module (name) @import.name .))) @import
(namespace_use_declaration (namespace_use_clause . (name) @import.module .)) @import
(namespace_use_declaration (namespace_name) @import.module
  body: (namespace_use_group (namespace_use_clause . [(name) (qualified_name)] @import.name))) @import
[(require_expression [(string (string_content) @import.module) (binary_expression right: (string (string_content) @import.module))])
 (require_once_expression [(string (string_content) @import.module) (binary_expression right: (string (string_content) @import.module))])
 (include_expression [(string (string_content) @import.module) (binary_expression right: (string (string_content) @import.module))])
 (include_once_expression [(string (string_content) @import.module) (binary_expression right: (string (string_content) @import.module))])] @import
