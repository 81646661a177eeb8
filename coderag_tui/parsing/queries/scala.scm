; Scala tag query (see README.md for the captures)

; ---- classes, traits, objects, enums (the extends clause lists the bases)
(class_definition name: (identifier) @name) @definition.class
(class_definition class_parameters: (class_parameters) @params) @definition.class
(class_definition extend: (extends_clause [(type_identifier) (generic_type) (stable_type_identifier)] @base)) @definition.class
(class_definition (annotation) @decorator) @definition.class
(trait_definition name: (identifier) @name) @definition.trait
(trait_definition extend: (extends_clause [(type_identifier) (generic_type) (stable_type_identifier)] @base)) @definition.trait
(object_definition name: (identifier) @name) @definition.object
(object_definition extend: (extends_clause [(type_identifier) (generic_type) (stable_type_identifier)] @base)) @definition.object
(enum_definition name: (identifier) @name) @definition.enum
(enum_definition extend: (extends_clause [(type_identifier) (generic_type) (stable_type_identifier)] @base)) @definition.enum
(type_definition name: (type_identifier) @name) @definition.type

; ---- functions and methods (abstract declarations too)
(function_definition name: (identifier) @name) @definition.function
(function_definition parameters: (parameters) @params) @definition.function
(function_definition return_type: (_) @return) @definition.function
(function_definition (annotation) @decorator) @definition.function
(function_declaration name: (identifier) @name) @definition.function
(function_declaration parameters: (parameters) @params) @definition.function
(function_declaration return_type: (_) @return) @definition.function

; ---- calls: f(x), obj.f(x), new T(x)
(call_expression function: (identifier) @call.name arguments: (arguments) @call.args) @call
(call_expression function: (field_expression value: (_) @call.receiver field: (identifier) @call.name)
  arguments: (arguments) @call.args) @call
(call_expression function: (generic_function function: (identifier) @call.name) arguments: (arguments) @call.args) @call
(instance_expression [(type_identifier) @call.name (generic_type type: (type_identifier) @call.name)]
  arguments: (arguments) @call.args) @call

; ---- imports: module = the dotted path (each segment captured), names = selectors or the last segment
(import_declaration (identifier) @import.module) @import
(import_declaration (identifier) @import.name .) @import
(import_declaration (namespace_selectors [(identifier) @import.name (arrow_renamed_identifier name: (identifier) @import.name)])) @import
