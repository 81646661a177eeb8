; Elixir tag query (see README.md for the captures). Definitions are macro calls: `def`,
; `defmodule`... name the kind; the called name or alias after them is the unit's name.

; ---- modules and protocols
((call target: (identifier) @_kw (arguments (alias) @name)) @definition.module
 (#any-of? @_kw "defmodule" "defprotocol" "defimpl"))

; ---- functions and macros: `def name(args) do`, `def name, do:`, `def name(args) when guard do`
((call target: (identifier) @_kw (arguments (call target: (identifier) @name (arguments) @params))) @definition.function
 (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp"))
((call target: (identifier) @_kw (arguments (identifier) @name)) @definition.function
 (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp"))
((call target: (identifier) @_kw
   (arguments (binary_operator left: (call target: (identifier) @name (arguments) @params) operator: "when"))) @definition.function
 (#any-of? @_kw "def" "defp" "defguard" "defguardp" "defn" "defnp"))
((call target: (identifier) @_kw (arguments (call target: (identifier) @name (arguments) @params))) @definition.macro
 (#any-of? @_kw "defmacro" "defmacrop"))
((call target: (identifier) @_kw (arguments (identifier) @name)) @definition.macro
 (#any-of? @_kw "defmacro" "defmacrop"))

; ---- calls: local `name(args)` and remote `Module.name(args)`; the definition keywords are not calls
((call target: (identifier) @call.name (arguments) @call.args) @call
 (#not-match? @call.name "^(def|defp|defmodule|defprotocol|defimpl|defmacro|defmacrop|defdelegate|defguard|defguardp|defstruct|defexception|defn|defnp|alias|import|require|use|moduledoc|doc|spec|type|typep|callback)$"))
(call target: (dot left: (_) @call.receiver right: (identifier) @call.name) (arguments) @call.args) @call

; ---- imports: alias, import, require and use name a module
((call target: (identifier) @_kw (arguments (alias) @import.module)) @import
 (#any-of? @_kw "alias" "import" "require" "use"))
