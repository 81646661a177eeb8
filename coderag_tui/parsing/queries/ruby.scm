; Ruby tag query (see README.md for the captures)

; ---- classes and modules; the superclass and included/extended modules are bases
(class name: [(constant) (scope_resolution)] @name) @definition.class
(class superclass: (superclass (_) @base)) @definition.class
((class body: (body_statement
   (call !receiver method: (identifier) @_mixin arguments: (argument_list [(constant) (scope_resolution)] @base))))
 @definition.class
 (#any-of? @_mixin "include" "extend" "prepend"))
(module name: [(constant) (scope_resolution)] @name) @definition.module
((module body: (body_statement
   (call !receiver method: (identifier) @_mixin arguments: (argument_list [(constant) (scope_resolution)] @base))))
 @definition.module
 (#any-of? @_mixin "include" "extend" "prepend"))

; ---- methods: `def m` (a method inside classes and modules), `def self.m`
(method name: (_) @name) @definition.function
(method parameters: (method_parameters) @params) @definition.function
(module body: (body_statement (method) @definition.method))
(singleton_method name: (_) @name) @definition.method
(singleton_method parameters: (method_parameters) @params) @definition.method

; ---- calls: f(x), obj.f(x), obj.f
(call !receiver method: (identifier) @call.name arguments: (argument_list) @call.args) @call
(call receiver: (_) @call.receiver method: (_) @call.name arguments: (argument_list) @call.args) @call
(call receiver: (_) @call.receiver method: (_) @call.name !arguments) @call

; ---- imports: require / require_relative / load
((call !receiver method: (identifier) @_require
   arguments: (argument_list . (string (string_content) @import.module))) @import
 (#any-of? @_require "require" "require_relative" "load" "autoload"))
