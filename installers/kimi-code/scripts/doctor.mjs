// PowerContext for Kimi Code: the read-only probes `powercontext doctor kimi-code` runs
// (`node scripts/doctor.mjs --cwd DIR [--runtime] [--session-id ID] [--mcp]`): our hook executable
// is there, and the saved Server answers with the saved token. One JSON object on stdout.
import { accessSync, constants } from "node:fs"
import { HOOK, settings } from "../shared/runtime.mjs"

const args = process.argv.slice(2)
const checks = {}
const ok = (detail) => ({ status: "ok", detail })
const failed = (detail) => ({ status: "failed", detail })

try {
  accessSync(HOOK, constants.X_OK)
  checks.hook_executable = ok("powercontext-hook-kimi-code is installed")
} catch {
  checks.hook_executable = failed("powercontext-hook-kimi-code is missing: install powercontext-hooks, then run `powercontext-hooks package` and setup again")
}

const saved = settings()
const base = typeof saved.server_url === "string" ? saved.server_url.replace(/\/+$/, "") : ""
if (!base) {
  checks.server = failed("no Server URL saved: run powercontext setup kimi-code")
} else {
  const token = saved.use_token ? process.env.POWERCONTEXT_KIMI_TOKEN : undefined
  if (saved.use_token && !token) {
    checks.server = failed("POWERCONTEXT_KIMI_TOKEN is not set in this environment")
  } else {
    try {
      const res = await fetch(`${base}/v1/scopes/default`, {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        redirect: "manual",
        signal: AbortSignal.timeout(4000),
      })
      checks.server =
        res.status === 200
          ? ok(`reachable at ${base}`)
          : res.status === 401 || res.status === 403
            ? failed(`the Server refused the token (HTTP ${res.status})`)
            : failed(`the Server answered HTTP ${res.status}`)
    } catch {
      checks.server = failed(`the Server at ${base} is unreachable`)
    }
  }
}

const report = { schema: "powercontext.kimi-code.diagnostics.v2", checks }
if (args.includes("--runtime")) {
  // The hooks keep no per-session history for this probe: `powercontext-hooks doctor kimi-code`
  // proves a real round trip instead.
  report.runtime = { status: "unavailable", code: "not_recorded" }
}
console.log(JSON.stringify(report))
