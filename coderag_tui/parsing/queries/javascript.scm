; JavaScript tag query (see README.md for the captures)

; ---- classes
(class_declaration name: (identifier) @name) @definition.class
(class_declaration decorator: (decorator) @decorator) @definition.class
(class_declaration (class_heritage (_) @base)) @definition.class
(class name: (identifier) @name) @definition.class
(class (class_heritage (_) @base)) @definition.class

; ---- methods (class members and object-literal methods), class fields holding functions
(method_definition name: (_) @name parameters: (formal_parameters) @params) @definition.method
(method_definition decorator: (decorator) @decorator) @definition.method
(field_definition property: (property_identifier) @name
  value: [(arrow_function parameters: (formal_parameters) @params)
          (function_expression parameters: (formal_parameters) @params)]) @definition.method

; ---- functions
(function_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.function
(generator_function_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(arrow_function parameters: (formal_parameters) @params)
            (function_expression parameters: (formal_parameters) @params)])) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name
    value: (arrow_function parameter: (identifier)))) @definition.function
(variable_declaration
  (variable_declarator name: (identifier) @name
    value: [(arrow_function parameters: (formal_parameters) @params)
            (function_expression parameters: (formal_parameters) @params)])) @definition.function

; ---- calls
(call_expression function: (identifier) @call.name arguments: (arguments) @call.args) @call
(call_expression
  function: (member_expression object: (_) @call.receiver property: (property_identifier) @call.name)
  arguments: (arguments) @call.args) @call
(new_expression constructor: (identifier) @call.name arguments: (arguments) @call.args) @call
(new_expression
  constructor: (member_expression object: (_) @call.receiver property: (property_identifier) @call.name)
  arguments: (arguments) @call.args) @call

; ---- imports: ES modules, re-exports, require() and import()
(import_statement source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (identifier) @import.name)) @import
(import_statement (import_clause (namespace_import (identifier) @import.name))) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @import.name)))) @import
(export_statement source: (string (string_fragment) @import.module)) @import
(export_statement (export_clause (export_specifier name: (identifier) @import.name))
  source: (string)) @import
((call_expression function: (identifier) @_require
   arguments: (arguments . (string (string_fragment) @import.module))) @import
 (#eq? @_require "require"))
((variable_declarator name: (identifier) @import.name
   value: (call_expression function: (identifier) @_require
     arguments: (arguments . (string (string_fragment) @import.module))) @import)
 (#eq? @_require "require"))
(call_expression function: (import)
  arguments: (arguments . (string (string_fragment) @import.module))) @import
