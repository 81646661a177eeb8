; Swift tag query (see README.md for the captures)
; class_declaration covers class, struct, enum, extension and actor: the keyword tells them apart.

; ---- types (inheritance specifiers are bases); extensions are named after the extended type
(class_declaration "class" name: (type_identifier) @name) @definition.class
(class_declaration "actor" name: (type_identifier) @name) @definition.class
(class_declaration "struct" name: (type_identifier) @name) @definition.struct
(class_declaration "enum" name: (type_identifier) @name) @definition.enum
(class_declaration "extension" name: (user_type (type_identifier) @name)) @definition.extension
(class_declaration (inheritance_specifier inherits_from: (_) @base)) @definition.class
(class_declaration (modifiers (attribute) @decorator)) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.protocol
(protocol_declaration (inheritance_specifier inherits_from: (_) @base)) @definition.protocol
(protocol_declaration (modifiers (attribute) @decorator)) @definition.protocol
(typealias_declaration name: (type_identifier) @name) @definition.type

; ---- functions, methods, initializers (parameters are direct children: one @param each)
(function_declaration name: (simple_identifier) @name) @definition.function
(function_declaration (parameter) @param) @definition.function
(function_declaration "->" . (_) @return) @definition.function
(function_declaration (modifiers (attribute) @decorator)) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(protocol_function_declaration (parameter) @param) @definition.method
(protocol_function_declaration "->" . (_) @return) @definition.method
(init_declaration "init" @name) @definition.constructor
(init_declaration (parameter) @param) @definition.constructor
(init_declaration (modifiers (attribute) @decorator)) @definition.constructor
(deinit_declaration "deinit" @name) @definition.method

; ---- calls: f(x), obj.f(x), f { closure }
(call_expression (simple_identifier) @call.name (call_suffix (value_arguments) @call.args)) @call
(call_expression (simple_identifier) @call.name (call_suffix . (lambda_literal))) @call
(call_expression
  (navigation_expression target: (_) @call.receiver suffix: (navigation_suffix suffix: (simple_identifier) @call.name))
  (call_suffix (value_arguments) @call.args)) @call
(call_expression
  (navigation_expression target: (_) @call.receiver suffix: (navigation_suffix suffix: (simple_identifier) @call.name))
  (call_suffix . (lambda_literal))) @call

; ---- imports
(import_declaration (identifier) @import.module) @import
