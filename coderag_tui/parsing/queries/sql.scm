; SQL tag query (see README.md for the captures): the objects a schema creates

(create_table (object_reference name: (identifier) @name)) @definition.table
(create_view (object_reference name: (identifier) @name)) @definition.view
(create_materialized_view (object_reference name: (identifier) @name)) @definition.view
(create_function (object_reference name: (identifier) @name) (function_arguments) @params) @definition.function
(create_index column: (identifier) @name) @definition.index
(create_trigger (object_reference name: (identifier) @name)) @definition.trigger
(create_type (object_reference name: (identifier) @name)) @definition.type
(create_schema (identifier) @name) @definition.namespace

; ---- calls: function invocations (`count(*)`, `add(1, 2)`)
(invocation (object_reference name: (identifier) @call.name)) @call
