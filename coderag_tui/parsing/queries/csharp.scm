; C# tag query (see README.md for the captures)

; ---- namespaces and types
(namespace_declaration name: (_) @name) @definition.namespace
(class_declaration name: (identifier) @name) @definition.class
(class_declaration (base_list) @bases) @definition.class
(class_declaration (attribute_list) @decorator) @definition.class
(struct_declaration name: (identifier) @name) @definition.struct
(struct_declaration (base_list) @bases) @definition.struct
(struct_declaration (attribute_list) @decorator) @definition.struct
(interface_declaration name: (identifier) @name) @definition.interface
(interface_declaration (base_list) @bases) @definition.interface
(interface_declaration (attribute_list) @decorator) @definition.interface
(enum_declaration name: (identifier) @name) @definition.enum
(enum_declaration (attribute_list) @decorator) @definition.enum
(record_declaration name: (identifier) @name) @definition.record
(record_declaration (parameter_list) @params) @definition.record
(record_declaration (base_list [(identifier) (qualified_name) (generic_name)] @base)) @definition.record
(record_declaration (base_list (primary_constructor_base_type type: (_) @base))) @definition.record
(record_declaration (attribute_list) @decorator) @definition.record
(delegate_declaration name: (identifier) @name parameters: (parameter_list) @params) @definition.type
(delegate_declaration type: (_) @return) @definition.type

; ---- methods, constructors, local functions
(method_declaration name: (identifier) @name parameters: (parameter_list) @params) @definition.method
(method_declaration returns: (_) @return) @definition.method
(method_declaration (attribute_list) @decorator) @definition.method
(constructor_declaration name: (identifier) @name parameters: (parameter_list) @params) @definition.constructor
(constructor_declaration (attribute_list) @decorator) @definition.constructor
(destructor_declaration name: (identifier) @name parameters: (parameter_list) @params) @definition.method
(operator_declaration operator: _ @name parameters: (parameter_list) @params) @definition.method
(local_function_statement name: (identifier) @name parameters: (parameter_list) @params) @definition.function
(local_function_statement type: (_) @return) @definition.function

; ---- calls: f(x), obj.f(x), f<T>(x), new T(x)
(invocation_expression function: (identifier) @call.name arguments: (argument_list) @call.args) @call
(invocation_expression function: (generic_name (identifier) @call.name) arguments: (argument_list) @call.args) @call
(invocation_expression
  function: (member_access_expression expression: (_) @call.receiver
    name: [(identifier) @call.name (generic_name (identifier) @call.name)])
  arguments: (argument_list) @call.args) @call
(object_creation_expression
  type: [(identifier) @call.name (generic_name (identifier) @call.name) (qualified_name name: (_) @call.name)]
  arguments: (argument_list) @call.args) @call

; ---- imports: using directives (an alias is the name brought in)
(using_directive !name [(identifier) (qualified_name)] @import.module) @import
(using_directive name: (identifier) @import.name [(identifier) (qualified_name)] @import.module) @import
