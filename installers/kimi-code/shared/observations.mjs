// PowerContext for Kimi Code: what the hooks recorded locally, read through
// `powercontext-hooks status --json` (content-free: counts and outcomes, never prompts).
import { CLI, run } from "./runtime.mjs"

/** The status object, or null when the CLI is missing or says nothing. */
export async function observations() {
  const out = await run(CLI, ["status", "--json"], Buffer.alloc(0), 5000)
  try {
    return JSON.parse(out.toString("utf8"))
  } catch {
    return null
  }
}
