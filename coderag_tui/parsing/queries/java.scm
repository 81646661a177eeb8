; Java tag query (see README.md for the captures)

; ---- types
(class_declaration name: (identifier) @name) @definition.class
(class_declaration superclass: (superclass (_) @base)) @definition.class
(class_declaration interfaces: (super_interfaces (type_list) @bases)) @definition.class
(class_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.class
(interface_declaration name: (identifier) @name) @definition.interface
(interface_declaration (extends_interfaces (type_list) @bases)) @definition.interface
(interface_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(enum_declaration interfaces: (super_interfaces (type_list) @bases)) @definition.enum
(enum_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.enum
(record_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.record
(record_declaration interfaces: (super_interfaces (type_list) @bases)) @definition.record
(record_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.record
(annotation_type_declaration name: (identifier) @name) @definition.interface

; ---- methods and constructors
(method_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.method
(method_declaration type: (_) @return) @definition.method
(method_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.method
(constructor_declaration name: (identifier) @name parameters: (formal_parameters) @params) @definition.constructor
(constructor_declaration (modifiers [(annotation) (marker_annotation)] @decorator)) @definition.constructor
(compact_constructor_declaration name: (identifier) @name) @definition.constructor

; ---- calls: f(x), obj.f(x), new T(x)
(method_invocation !object name: (identifier) @call.name arguments: (argument_list) @call.args) @call
(method_invocation object: (_) @call.receiver name: (identifier) @call.name arguments: (argument_list) @call.args) @call
(object_creation_expression type: [(type_identifier) @call.name (scoped_type_identifier (type_identifier) @call.name .)
  (generic_type [(type_identifier) @call.name (scoped_type_identifier (type_identifier) @call.name .)])]
  arguments: (argument_list) @call.args) @call

; ---- imports: module = the package, name = the imported class/member
(import_declaration (scoped_identifier scope: (_) @import.module name: (identifier) @import.name) .) @import
(import_declaration (scoped_identifier) @import.module (asterisk)) @import
(import_declaration (identifier) @import.module) @import
