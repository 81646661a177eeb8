; Rust tag query (see README.md for the captures)

; ---- types
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.union
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(trait_item bounds: (trait_bounds) @bases) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name body: (declaration_list)) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(source_file [(const_item name: (identifier) @name) (static_item name: (identifier) @name)] @definition.constant)

; ---- impl blocks: a unit named after the type, the trait it implements is its base
(impl_item type: [(type_identifier) @name
                  (generic_type type: (type_identifier) @name)
                  (scoped_type_identifier name: (type_identifier) @name)
                  (generic_type type: (scoped_type_identifier name: (type_identifier) @name))]) @definition.impl
(impl_item trait: [(type_identifier) (scoped_type_identifier)] @base) @definition.impl
(impl_item trait: (generic_type type: (_) @base)) @definition.impl

; ---- functions (methods inside impl and trait blocks; the impl type is their scope)
(function_item name: (identifier) @name parameters: (parameters) @params) @definition.function
(function_item return_type: (_) @return) @definition.function
(function_signature_item name: (identifier) @name parameters: (parameters) @params) @definition.function
(function_signature_item return_type: (_) @return) @definition.function
(impl_item type: [(type_identifier) @scope (generic_type type: (type_identifier) @scope)]
  body: (declaration_list (function_item) @definition.method))

; ---- attributes (#[derive], #[test]) are siblings just before the item
(_ (attribute_item)* @decorator . (function_item) @definition.function)
(_ (attribute_item)* @decorator . (struct_item) @definition.struct)
(_ (attribute_item)* @decorator . (enum_item) @definition.enum)
(_ (attribute_item)* @decorator . (trait_item) @definition.trait)
(_ (attribute_item)* @decorator . (impl_item) @definition.impl)
(_ (attribute_item)* @decorator . (mod_item) @definition.module)

; ---- calls: f(x), obj.m(x), Type::f(x), macros
(call_expression function: (identifier) @call.name arguments: (arguments) @call.args) @call
(call_expression
  function: (field_expression value: (_) @call.receiver field: (field_identifier) @call.name)
  arguments: (arguments) @call.args) @call
(call_expression
  function: (scoped_identifier path: (_) @call.receiver name: (identifier) @call.name)
  arguments: (arguments) @call.args) @call
(call_expression
  function: (generic_function function: (identifier) @call.name)
  arguments: (arguments) @call.args) @call
(call_expression
  function: (generic_function function: (scoped_identifier path: (_) @call.receiver name: (identifier) @call.name))
  arguments: (arguments) @call.args) @call
(call_expression
  function: (generic_function function: (field_expression value: (_) @call.receiver field: (field_identifier) @call.name))
  arguments: (arguments) @call.args) @call
(macro_invocation macro: (identifier) @call.name) @call
(macro_invocation macro: (scoped_identifier path: (_) @call.receiver name: (identifier) @call.name)) @call

; ---- imports: use paths (module = the path, names = the items), extern crate
(use_declaration argument: (identifier) @import.module) @import
(use_declaration argument: (scoped_identifier path: (_) @import.module name: (identifier) @import.name)) @import
(use_declaration argument: (use_as_clause path: (scoped_identifier path: (_) @import.module name: (identifier) @import.name))) @import
(use_declaration argument: (use_as_clause path: (identifier) @import.module)) @import
(use_declaration argument: (use_wildcard (_) @import.module)) @import
(use_declaration argument: (scoped_use_list path: (_) @import.module)) @import
(use_declaration argument: (scoped_use_list list: (use_list [
  (identifier) @import.name
  (self) @import.name
  (use_as_clause path: (identifier) @import.name)
  (use_as_clause path: (scoped_identifier name: (identifier) @import.name))
  (scoped_identifier name: (identifier) @import.name)
  (scoped_use_list path: (_) @import.name)]))) @import
(use_declaration argument: (use_list [(identifier) @import.name (scoped_identifier) @import.name])) @import
(extern_crate_declaration name: (identifier) @import.module) @import
