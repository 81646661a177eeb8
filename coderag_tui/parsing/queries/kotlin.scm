; Kotlin tag query (see README.md for the captures)
; When patterns disagree on a kind the earliest wins: interface and enum come before class.

; ---- classes, interfaces, enums, objects (delegation specifiers are bases)
(class_declaration "interface" (type_identifier) @name) @definition.interface
(class_declaration (type_identifier) @name (enum_class_body)) @definition.enum
(class_declaration (type_identifier) @name) @definition.class
(class_declaration (primary_constructor) @params) @definition.class
(class_declaration (delegation_specifier [(user_type) @base
                                          (constructor_invocation (user_type) @base)
                                          (explicit_delegation (user_type) @base)])) @definition.class
(class_declaration (modifiers (annotation) @decorator)) @definition.class
(object_declaration (type_identifier) @name) @definition.object
(object_declaration (delegation_specifier [(user_type) @base (constructor_invocation (user_type) @base)])) @definition.object
(companion_object (type_identifier) @name) @definition.object
(type_alias (type_identifier) @name) @definition.type
; a doc comment right after the imports (or the package line) is parsed into them
((import_list (import_header [(multiline_comment) (line_comment)] @doc .) .) . (class_declaration) @definition.class)
((import_list (import_header [(multiline_comment) (line_comment)] @doc .) .) . (object_declaration) @definition.object)
((import_list (import_header [(multiline_comment) (line_comment)] @doc .) .) . (function_declaration) @definition.function)
((package_header [(multiline_comment) (line_comment)] @doc .) . (class_declaration) @definition.class)
((package_header [(multiline_comment) (line_comment)] @doc .) . (object_declaration) @definition.object)
((package_header [(multiline_comment) (line_comment)] @doc .) . (function_declaration) @definition.function)

; ---- functions (extension functions are scoped by their receiver type), constructors
(function_declaration (simple_identifier) @name) @definition.function
; default values are siblings of the parameters: capture each parameter
(function_declaration (function_value_parameters (parameter) @param)) @definition.function
(function_declaration (function_value_parameters) .
  [(user_type) (nullable_type) (function_type) (parenthesized_type)] @return) @definition.function
(function_declaration (modifiers (annotation) @decorator)) @definition.function
(function_declaration (receiver_type [(user_type (type_identifier) @scope) (nullable_type (user_type (type_identifier) @scope))])) @definition.function
(secondary_constructor "constructor" @name) @definition.constructor
(secondary_constructor (function_value_parameters (parameter) @param)) @definition.constructor

; ---- calls: f(x), obj.f(x), f { lambda }
(call_expression (simple_identifier) @call.name (call_suffix (value_arguments) @call.args)) @call
(call_expression (simple_identifier) @call.name (call_suffix . (annotated_lambda))) @call
(call_expression
  (navigation_expression (_) @call.receiver (navigation_suffix (simple_identifier) @call.name))
  (call_suffix (value_arguments) @call.args)) @call
(call_expression
  (navigation_expression (_) @call.receiver (navigation_suffix (simple_identifier) @call.name))
  (call_suffix . (annotated_lambda))) @call

; ---- imports: module = the imported path, name = its last segment (or the alias)
(import_header (identifier) @import.module) @import
(import_header (identifier (simple_identifier) @import.name .) .) @import
(import_header (import_alias (type_identifier) @import.name)) @import
