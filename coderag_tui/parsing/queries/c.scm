; C tag query (see README.md for the captures)

; ---- types (only with a body: `struct node *next` is a use, not a definition)
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.union
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.enum
(type_definition type: (struct_specifier !name body: (field_declaration_list))
  declarator: (type_identifier) @name) @definition.struct
(type_definition type: (union_specifier !name body: (field_declaration_list))
  declarator: (type_identifier) @name) @definition.union
(type_definition type: (enum_specifier !name body: (enumerator_list))
  declarator: (type_identifier) @name) @definition.enum
(type_definition type: [(primitive_type) (type_identifier) (sized_type_specifier)
                        (struct_specifier !body) (union_specifier !body) (enum_specifier !body)]
  declarator: (type_identifier) @name) @definition.type
(type_definition declarator: (function_declarator
  declarator: (parenthesized_declarator (pointer_declarator declarator: (type_identifier) @name)))) @definition.type

; ---- functions (definitions and prototypes); the name may sit under pointer declarators
(function_definition declarator: (function_declarator declarator: (identifier) @name parameters: (parameter_list) @params)) @definition.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name parameters: (parameter_list) @params))) @definition.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name parameters: (parameter_list) @params)))) @definition.function
(function_definition type: (_) @return) @definition.function
(declaration declarator: (function_declarator declarator: (identifier) @name parameters: (parameter_list) @params)) @definition.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name parameters: (parameter_list) @params))) @definition.function
(declaration type: (_) @return declarator: [(function_declarator) (pointer_declarator (function_declarator))]) @definition.function

; ---- macros
(preproc_function_def name: (identifier) @name parameters: (preproc_params) @params) @definition.macro
(preproc_def name: (identifier) @name value: (_)) @definition.constant

; ---- calls: f(x), s.f(x), p->f(x)
(call_expression function: (identifier) @call.name arguments: (argument_list) @call.args) @call
(call_expression
  function: (field_expression argument: (_) @call.receiver field: (field_identifier) @call.name)
  arguments: (argument_list) @call.args) @call

; ---- includes
(preproc_include path: (_) @import.module) @import
