// PowerContext for Kimi Code: where our executables are (rendered by `powercontext-hooks package`)
// and the one way this plugin runs them: stdin in, stdout out, bounded in time and size, and
// never a failure Kimi would see (a missing or hanging executable leaves the turn unchanged).
import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

/** powercontext-hook-kimi-code */
export const HOOK = "{{hook_path}}"
/** powercontext-hooks (the CLI) */
export const CLI = "{{cli_path}}"
/** The plugin folder (the official installer copies it under Kimi's home). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..")

// Inside Kimi's 5 s hook timeout; the hook keeps its own shorter deadline.
const LIMIT_MS = 4800
// One answer line is far smaller; more is not passed on.
const MAX_OUT = 4 * 1024 * 1024

/** The settings the official installer saved (server_url, scope_id, …), or `{}`. */
export function settings() {
  try {
    const v = JSON.parse(readFileSync(join(ROOT, "powercontext.json"), "utf8"))
    return v && typeof v === "object" && !Array.isArray(v) ? v : {}
  } catch {
    return {}
  }
}

/** Runs `exe args` with `input` on stdin; resolves to its stdout (empty on any failure). */
export function run(exe, args, input, limitMs = LIMIT_MS) {
  return new Promise((resolve) => {
    let child
    try {
      child = spawn(exe, args, { stdio: ["pipe", "pipe", "ignore"] })
    } catch {
      resolve(Buffer.alloc(0))
      return
    }
    const out = []
    let size = 0
    let done = false
    const finish = (bytes) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve(bytes)
    }
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL")
      } catch {}
      finish(Buffer.alloc(0))
    }, limitMs)
    child.on("error", () => finish(Buffer.alloc(0)))
    child.stdout.on("data", (c) => {
      size += c.length
      if (size <= MAX_OUT) out.push(c)
    })
    child.on("close", () => finish(size <= MAX_OUT ? Buffer.concat(out) : Buffer.alloc(0)))
    child.stdin.on("error", () => {})
    child.stdin.end(input)
  })
}

/** Reads all of `input`, runs the hook on it and writes its answer to `output`. */
export async function runHook(input, output) {
  const chunks = []
  try {
    for await (const c of input) chunks.push(c)
  } catch {
    return
  }
  const answer = await run(HOOK, [], Buffer.concat(chunks))
  if (answer.length > 0) output.write(answer)
}
