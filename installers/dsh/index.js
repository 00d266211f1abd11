// PowerContext for DSH (DeepSeek Harness): a thin Cordis plugin. Its `agent/pre-step` middleware
// hands each step's batch to the powercontext-hook-dsh executable (JSON on stdin, one JSON line
// on stdout), calls next() exactly once, and appends the returned context as a plugin message only
// when the downstream decision is `enter`. Every PowerContext decision (which text is the user's,
// scope, recall once per turn, capture and its secret filter, base URL and token rules) is made
// by the executable. This file never throws and never hangs: each spawn has a hard deadline,
// combined with DSH's abort signal, and any error means "no change".
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"

export const name = "powercontext-dsh"
export const inject = ["agents", "tools"]

// Rendered at install time to the executable's absolute path (a JSON string, no shell involved).
const RENDERED_EXECUTABLE = "{{hook_command}}"
const EXECUTABLE_ENV = "POWERCONTEXT_DSH_HOOK_EXECUTABLE"
// The executable's own budget is 4 s by default; past this the child is killed.
const DEFAULT_TIMEOUT_MS = 5000
const MAX_STDOUT_BYTES = 1 << 20
const MAX_STDERR_BYTES = 1 << 16

function executable() {
  const override = process.env[EXECUTABLE_ENV]
  if (typeof override === "string" && override.trim() !== "") return override
  // Not rendered (a raw checkout): fall back to PATH.
  if (RENDERED_EXECUTABLE.startsWith("{" + "{")) return "powercontext-hook-dsh"
  return RENDERED_EXECUTABLE
}

// The row's connection values (as the official plugin's row config names them), handed to the
// executable under names it ranks below its own environment and config file.
function rowEnv(config) {
  const env = { ...process.env }
  const put = (name, value) => {
    if (typeof value === "string" && value.trim() !== "") env[name] = value
    else if (typeof value === "boolean") env[name] = String(value)
  }
  put("POWERCONTEXT_DSH_ROW_BASE_URL", config?.baseUrl)
  put("POWERCONTEXT_DSH_ROW_AUTHORIZATION", config?.authorization)
  put("POWERCONTEXT_DSH_ROW_ALLOW_INSECURE_HTTP", config?.allowInsecureHttp)
  return env
}

function timeoutMs(config) {
  const value = config?.timeoutMs
  return Number.isFinite(value) && value > 0 ? Math.min(value, 60_000) : DEFAULT_TIMEOUT_MS
}

// The batch as the executable reads it: ids, numbers, and only the text blocks of each message.
function batch(payload) {
  const header = payload?.agent?.session?.header
  const messages = Array.isArray(payload?.messages) ? payload.messages : []
  return {
    session: {
      id: typeof header?.id === "string" ? header.id : undefined,
      cwd: typeof header?.cwd === "string" ? header.cwd : undefined,
    },
    turn: payload?.turn,
    step: payload?.step,
    messages: messages.map((m) => ({
      source: { kind: typeof m?.source?.kind === "string" ? m.source.kind : undefined },
      content: (Array.isArray(m?.content) ? m.content : [])
        .filter((b) => b?.type === "text" && typeof b.text === "string")
        .map((b) => ({ type: "text", text: b.text })),
    })),
  }
}

function deepFreeze(value) {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const v of Object.values(value)) deepFreeze(v)
  }
  return value
}

// Same shape as @deepseek-ai/dsh-llm's createUserMessage (frozen, fresh id), built here so the
// plugin imports no DSH package and loads from any path.
function pluginMessage(text) {
  return deepFreeze({
    content: [{ type: "text", text }],
    source: { kind: "plugin", plugin: name },
    role: "user",
    id: randomUUID(),
  })
}

// Diagnostics are content-free JSON lines from the executable; they go to the DSH logger as is.
function forward(logger, stderr) {
  for (const line of stderr.split("\n")) {
    const text = line.trim()
    if (text === "") continue
    let outcome
    try {
      outcome = JSON.parse(text)?.outcome
    } catch {
      continue
    }
    if (outcome === "empty") logger.debug(text)
    else logger.warn(text)
  }
}

// Kills a child's whole process group: a wrapper script's children must not outlive the deadline.
function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL")
  } catch {
    try {
      child?.kill("SIGKILL")
    } catch {}
  }
}

// Runs the executable once. Resolves to the context text or undefined; never rejects.
function runHook(input, limitMs, signal, logger, env) {
  return new Promise((resolve) => {
    let done = false
    let child
    let timer
    const finish = (value) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener?.("abort", onAbort)
      resolve(value)
    }
    const stop = (outcome) => {
      killGroup(child)
      logger.warn(JSON.stringify({ component: "powercontext.dsh.plugin", outcome }))
      finish(undefined)
    }
    const onAbort = () => stop("aborted")
    if (signal?.aborted) return finish(undefined)
    try {
      child = spawn(executable(), ["pre-step"], {
        stdio: ["pipe", "pipe", "pipe"],
        env,
        detached: process.platform !== "win32",
        windowsHide: true,
      })
    } catch {
      return stop("spawn_failed")
    }
    timer = setTimeout(() => stop("timeout"), limitMs)
    signal?.addEventListener?.("abort", onAbort, { once: true })
    const out = []
    const err = []
    let outBytes = 0
    let errBytes = 0
    child.stdout.on("data", (chunk) => {
      outBytes += chunk.length
      if (outBytes <= MAX_STDOUT_BYTES) out.push(chunk)
    })
    child.stderr.on("data", (chunk) => {
      errBytes += chunk.length
      if (errBytes <= MAX_STDERR_BYTES) err.push(chunk)
    })
    child.on("error", () => stop("spawn_failed"))
    child.on("close", () => {
      if (done) return
      try {
        forward(logger, Buffer.concat(err).toString("utf8"))
        const line = outBytes <= MAX_STDOUT_BYTES ? Buffer.concat(out).toString("utf8").trim() : ""
        const context = line === "" ? undefined : JSON.parse(line)?.context
        finish(typeof context === "string" && context.trim() !== "" ? context : undefined)
      } catch {
        finish(undefined)
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(input))
  })
}

export function apply(ctx, config) {
  let logger
  try {
    logger = ctx.logger(name)
  } catch {
    logger = { warn() {}, debug() {} }
  }
  const limitMs = timeoutMs(config)
  const env = rowEnv(config)

  try {
    registerTools(ctx, env)
  } catch (e) {
    logger.warn(JSON.stringify({ component: "powercontext.dsh.plugin", outcome: "tools_unavailable" }))
  }

  ctx.on("agent/pre-step", async (payload, next) => {
    // The executable runs while the rest of the chain decides; next() is called exactly once.
    let pending
    try {
      pending = runHook(batch(payload), limitMs, payload?.signal, logger, env)
    } catch {
      pending = Promise.resolve(undefined)
    }
    const decision = await next()
    const context = await pending
    try {
      if (context === undefined || decision?.kind !== "enter" || payload?.signal?.aborted) return decision
      return { ...decision, messages: [...decision.messages, pluginMessage(context)] }
    } catch {
      return decision
    }
  })
}

// ---- Explicit operations: the pc_* tools -------------------------------------------------------
// Each tool runs `powercontext-hooks op <name>` (CLI_COMMAND, or POWERCONTEXT_HOOKS_CLI), made from
// the CLI's one operations table rendered in at install time. Unlike the hooks they never fail
// open: a failure is a tool error with its code. A mutating tool is gated by `tools/pre-execute`,
// which answers `ask` (DSH's approval seam asks the user; with no answerer DSH refuses); the tool
// itself runs a mutation only for a call this plugin asked about.

const CLI_COMMAND = "{{cli_command}}"
const CLI_COMMAND_ENV = "POWERCONTEXT_HOOKS_CLI"
const OPERATIONS = "{{operations}}"
// The CLI ends a call at 15 s; this only catches a CLI that cannot.
const OP_TIMEOUT_MS = 20000

function cliCommand() {
  const override = process.env[CLI_COMMAND_ENV]
  if (typeof override === "string" && override.trim() !== "") return override.trim()
  return CLI_COMMAND.startsWith("{") ? "powercontext-hooks" : CLI_COMMAND
}

function operations() {
  try {
    const list = JSON.parse(OPERATIONS)
    return Array.isArray(list) ? list : []
  } catch {
    return []
  }
}

// Runs the CLI with `argv` and `args` as JSON on stdin; its one JSON answer, or a failure in the
// same shape. Never rejects.
function runOp(name, argv, args, env, signal) {
  return new Promise((resolve) => {
    let done = false
    let timer
    let child
    const finish = (value) => {
      if (done) return
      done = true
      clearTimeout(timer)
      signal?.removeEventListener?.("abort", onAbort)
      resolve(value)
    }
    const failed = (code, message) => finish({ ok: false, operation: name, code, message })
    const kill = () => killGroup(child)
    const onAbort = () => {
      kill()
      failed("cancelled", "the call was aborted")
    }
    try {
      child = spawn(cliCommand(), argv, { stdio: ["pipe", "pipe", "ignore"], detached: true, env })
    } catch {
      return failed("config_error", `powercontext-hooks could not run; set ${CLI_COMMAND_ENV} or run setup again`)
    }
    timer = setTimeout(() => {
      kill()
      failed("timeout", "powercontext-hooks did not answer in time")
    }, OP_TIMEOUT_MS)
    signal?.addEventListener?.("abort", onAbort, { once: true })
    const out = []
    let bytes = 0
    child.stdout.on("data", (chunk) => {
      bytes += chunk.length
      if (bytes <= MAX_STDOUT_BYTES) out.push(chunk)
    })
    child.on("error", () =>
      failed("config_error", `powercontext-hooks could not run; set ${CLI_COMMAND_ENV} or run setup again`),
    )
    child.on("close", () => {
      try {
        const answer = JSON.parse(Buffer.concat(out).toString("utf8").trim())
        if (answer && typeof answer === "object" && typeof answer.ok === "boolean") return finish(answer)
      } catch {}
      failed("invalid_response", "powercontext-hooks gave no answer")
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(args))
  })
}

function registerTools(ctx, env) {
  const ops = operations()
  // A composition without the tool registry (or an unrendered copy) simply has no tools.
  if (ops.length === 0 || typeof ctx?.tools?.register !== "function") return
  const mutating = new Set(ops.filter((op) => op.mutates).map((op) => op.tool))
  // The calls whose pre-execute ask this plugin issued (DSH runs the tool only once it is granted).
  // Bounded: a rejected ask never reaches the tool to be removed.
  const asked = new Set()
  ctx.on("tools/pre-execute", async (exec, next) => {
    if (!mutating.has(exec?.name)) return next()
    if (exec.token !== undefined) asked.add(exec.token)
    if (asked.size > 256) asked.delete(asked.values().next().value)
    return { kind: "ask", reason: `PowerContext tool "${exec.name}" changes durable project context.` }
  })
  for (const op of ops) {
    const properties = {}
    for (const field of op.args_required ?? []) properties[field] = { description: field }
    ctx.tools.register({
      name: op.tool,
      description: op.mutates ? `${op.summary} Changes durable project context: DSH asks first.` : op.summary,
      parameters: { type: "object", properties, required: op.args_required ?? [] },
      output: {
        schema: { description: "The PowerContext Server's answer" },
        render: (_args, value) => [{ type: "text", text: JSON.stringify(value) }],
      },
      async execute(args, exec) {
        // Whatever the model put in its arguments, only DSH's approval confirms.
        const { confirmed: _ignored, ...rest } = args && typeof args === "object" ? args : {}
        let result
        const wasAsked = exec?.token !== undefined && asked.delete(exec.token)
        if (op.mutates && !wasAsked) {
          result = { ok: false, operation: op.name, code: "confirmation_required", message: `${op.name} ran without the approval ask; nothing was written` }
        } else {
          const argv = ["op", op.name, "--json", "--host", "dsh"]
          const cwd = exec?.agent?.session?.header?.cwd
          if (typeof cwd === "string" && cwd !== "") argv.push("--cwd", cwd)
          if (op.mutates) argv.push("--confirmed")
          result = await runOp(op.name, argv, rest, env, exec?.signal)
        }
        if (result.ok !== true) throw new Error(JSON.stringify(result))
        return result
      },
    })
  }
}
