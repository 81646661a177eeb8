; TSX tag query (see README.md for the captures); the same query as typescript.scm

; ---- classes, interfaces, enums, type aliases, namespaces
(class_declaration name: (type_identifier) @name) @definition.class
(abstract_class_declaration name: (type_identifier) @name) @definition.class
(class name: (type_identifier) @name) @definition.class
(_ (class_heritage (extends_clause value: (_) @base))) @definition.class
(_ (class_heritage (implements_clause) @bases)) @definition.class
(class_declaration decorator: (decorator) @decorator) @definition.class
(abstract_class_declaration decorator: (decorator) @decorator) @definition.class
(export_statement decorator: (decorator) @decorator declaration: (class_declaration) @definition.class)
(export_statement decorator: (decorator) @decorator declaration: (abstract_class_declaration) @definition.class)
(interface_declaration name: (type_identifier) @name) @definition.interface
(interface_declaration (extends_type_clause type: (_) @base)) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(type_alias_declaration name: (type_identifier) @name) @definition.type
(internal_module name: (_) @name) @definition.namespace
(module name: (_) @name) @definition.module

; ---- methods, method signatures, class fields holding functions
(method_definition name: (_) @name parameters: (formal_parameters) @params) @definition.method
(method_definition return_type: (type_annotation (_) @return)) @definition.method
(class_body (decorator)* @decorator . (method_definition) @definition.method)
(method_signature name: (_) @name parameters: (formal_parameters) @params) @definition.method
(method_signature return_type: (type_annotation (_) @return)) @definition.method
(abstract_method_signature name: (_) @name parameters: (formal_parameters) @params) @definition.method
(abstract_method_signature return_type: (type_annotation (_) @return)) @definition.method
(public_field_definition name: (property_identifier) @name
  value: [(arrow_function parameters: (formal_parameters) @params)
          (function_expression parameters: (formal_parameters) @params)]) @definition.method
(public_field_definition
  value: [(arrow_function return_type: (type_annotation (_) @return))
          (function_expression return_type: (type_annotation (_) @return))]) @definition.method
(class_body (decorator)* @decorator .
  (public_field_definition value: [(arrow_function) (function_expression)]) @definition.method)

; ---- functions
(function_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.function
(function_declaration return_type: (type_annotation (_) @return)) @definition.function
(generator_function_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.function
(generator_function_declaration return_type: (type_annotation (_) @return)) @definition.function
(function_signature name: (identifier) @name parameters: (formal_parameters) @params) @definition.function
(function_signature return_type: (type_annotation (_) @return)) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name
    value: [(arrow_function parameters: (formal_parameters) @params)
            (function_expression parameters: (formal_parameters) @params)])) @definition.function
(lexical_declaration
  (variable_declarator name: (identifier) @name
    value: (arrow_function parameter: (identifier)))) @definition.function
(lexical_declaration
  (variable_declarator
    value: [(arrow_function return_type: (type_annotation (_) @return))
            (function_expression return_type: (type_annotation (_) @return))])) @definition.function
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

; ---- imports: ES modules, `import x = require()`, re-exports, require() and import()
(import_statement source: (string (string_fragment) @import.module)) @import
(import_statement (import_clause (identifier) @import.name)) @import
(import_statement (import_clause (namespace_import (identifier) @import.name))) @import
(import_statement (import_clause (named_imports (import_specifier name: (identifier) @import.name)))) @import
(import_statement (import_require_clause (identifier) @import.name
  source: (string (string_fragment) @import.module))) @import
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
