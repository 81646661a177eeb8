; C++ tag query (see README.md for the captures)

; ---- namespaces and types (only with a body)
(namespace_definition name: (_) @name) @definition.namespace
(class_specifier name: (_) @name body: (field_declaration_list)) @definition.class
(struct_specifier name: (_) @name body: (field_declaration_list)) @definition.struct
(union_specifier name: (_) @name body: (field_declaration_list)) @definition.union
(enum_specifier name: (_) @name body: (enumerator_list)) @definition.enum
(class_specifier (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @base)) @definition.class
(struct_specifier (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @base)) @definition.struct
(type_definition type: (struct_specifier !name body: (field_declaration_list))
  declarator: (type_identifier) @name) @definition.struct
(alias_declaration name: (type_identifier) @name) @definition.type
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier) (qualified_identifier) (template_type)]
  declarator: (type_identifier) @name) @definition.type

; ---- functions and methods (inside a class they become methods)
(function_definition declarator: (function_declarator
  declarator: [(identifier) (field_identifier) (destructor_name) (operator_name)] @name
  parameters: (parameter_list) @params)) @definition.function
(function_definition declarator: (_ declarator: (function_declarator
  declarator: [(identifier) (field_identifier)] @name parameters: (parameter_list) @params))) @definition.function
(function_definition type: (_) @return) @definition.function
(function_definition (attribute_declaration) @decorator) @definition.function
; out-of-line member definitions: `double Circle::area() const` -> Circle.area
(function_definition declarator: (function_declarator
  declarator: (qualified_identifier scope: (_) @scope name: [(identifier) (destructor_name) (operator_name)] @name)
  parameters: (parameter_list) @params)) @definition.method
(function_definition declarator: (_ declarator: (function_declarator
  declarator: (qualified_identifier scope: (_) @scope name: (identifier) @name)
  parameters: (parameter_list) @params))) @definition.method
; declarations: member prototypes in a class body, free prototypes in headers
(field_declaration declarator: (function_declarator
  declarator: [(field_identifier) (operator_name)] @name parameters: (parameter_list) @params)) @definition.function
(field_declaration type: (_) @return declarator: (function_declarator)) @definition.function
(field_declaration_list (declaration declarator: (function_declarator
  declarator: [(identifier) (destructor_name) (operator_name)] @name parameters: (parameter_list) @params)) @definition.function)
; (only outside function bodies: `Scope scope(env);` in a body is a variable)
[
 (translation_unit (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (declaration_list (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (linkage_specification (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (template_declaration (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (preproc_if (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (preproc_ifdef (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (preproc_else (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
 (preproc_elif (declaration type: (_) @return declarator: (function_declarator declarator: [(identifier) (qualified_identifier)] @name parameters: (parameter_list) @params)) @definition.function)
]

; ---- macros
(preproc_function_def name: (identifier) @name parameters: (preproc_params) @params) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.constant

; ---- calls: f(x), obj.f(x), p->f(x), ns::f(x), f<T>(x), new T(x)
(call_expression function: (identifier) @call.name arguments: (argument_list) @call.args) @call
(call_expression
  function: (field_expression argument: (_) @call.receiver field: (field_identifier) @call.name)
  arguments: (argument_list) @call.args) @call
(call_expression
  function: (qualified_identifier scope: (_) @call.receiver name: (identifier) @call.name)
  arguments: (argument_list) @call.args) @call
(call_expression
  function: (template_function name: (identifier) @call.name)
  arguments: (argument_list) @call.args) @call
(call_expression
  function: (qualified_identifier scope: (_) @call.receiver name: (template_function name: (identifier) @call.name))
  arguments: (argument_list) @call.args) @call
(new_expression type: [(type_identifier) @call.name (qualified_identifier name: (_) @call.name)]
  arguments: (argument_list) @call.args) @call

; ---- imports: #include, using declarations
(preproc_include path: (_) @import.module) @import
(using_declaration (qualified_identifier scope: (_) @import.module name: (identifier) @import.name)) @import
(using_declaration . (identifier) @import.module) @import
