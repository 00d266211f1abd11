// PowerContext for Kimi Code: `node scripts/scope.mjs [--cwd DIR]` prints the Scope the hooks use
// here: the explicit one setup saved, else the workspace binding the Server resolves for DIR.
import { settings } from "../shared/runtime.mjs"

const args = process.argv.slice(2)
const at = args.indexOf("--cwd")
const cwd = at >= 0 && args[at + 1] ? args[at + 1] : process.cwd()
const scope = settings().scope_id
console.log(
  JSON.stringify({
    scope_id: typeof scope === "string" ? scope : null,
    source: typeof scope === "string" ? "configured" : "workspace binding (resolved by the Server per prompt)",
    cwd,
  }),
)
