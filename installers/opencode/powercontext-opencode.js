// PowerContext for OpenCode: a thin shim between OpenCode's plugin hooks and the Rust executable
// `powercontext-hook-opencode`, which makes every decision (prompt text, scope, recall, capture,
// secret filter, whether a turn gets a context and its exact text). This file only maps host
// events to the executable (JSON on stdin, JSON on stdout) and applies its answer: one process per
// prompt, on `chat.message`; the messages transform starts none, it only matches ids.
//
// It never throws (a throwing hook fails the OpenCode turn) and never hangs (OpenCode puts no
// timeout around hooks): every call has a hard deadline after which the executable's process group
// is killed, and any error or timeout means "change nothing".
//
// Install: copy to <opencode config dir>/plugins/powercontext-opencode.js (e.g.
// ~/.config/opencode/plugins/) with the hook_command placeholder below replaced by the absolute path of
// powercontext-hook-opencode, or set POWERCONTEXT_OPENCODE_HOOK_COMMAND to that path.

import { spawn, spawnSync } from "node:child_process"
import { writeFileSync } from "node:fs"

const HOOK_COMMAND = "{{hook_command}}"
const HOOK_COMMAND_VAR = "POWERCONTEXT_OPENCODE_HOOK_COMMAND"
// prepare runs scope + recall + capture within the executable's own budget (4 s by default,
// POWERCONTEXT_OPENCODE_HTTP_BUDGET_SECONDS); this deadline only catches a hung executable.
const PREPARE_TIMEOUT_MS_VAR = "POWERCONTEXT_OPENCODE_PREPARE_TIMEOUT_MS"
const PREPARE_TIMEOUT_MS = 6000
// forget and compacted only touch local files (the executable gives itself 2 s).
const LOCAL_TIMEOUT_MS = 3000
const SESSION_LOOKUP_TIMEOUT_MS = 2000
const MAX_STDOUT_BYTES = 1 << 20
const MAX_LOGGED_LINES = 8
const MAX_KNOWN_DIRECTORIES = 256
// Our message's and part's ids start with these: how a request that already carries the context
// is recognized (the transform may run more than once on the same request, and two copies of this
// file may be loaded).
const MESSAGE_ID_PREFIX = "msg_powercontext"
const PART_ID_PREFIX = "prt_powercontext"
const SERVICE = "powercontext-opencode"

function hookCommand() {
  const override = process.env[HOOK_COMMAND_VAR]
  if (typeof override === "string" && override.trim() !== "") return override.trim()
  // Left unrendered: the executable on PATH.
  return HOOK_COMMAND.startsWith("{") ? "powercontext-hook-opencode" : HOOK_COMMAND
}

function prepareTimeoutMs() {
  const n = Number.parseInt(process.env[PREPARE_TIMEOUT_MS_VAR] ?? "", 10)
  return Number.isFinite(n) && n > 0 ? n : PREPARE_TIMEOUT_MS
}

function killGroup(child) {
  try {
    process.kill(-child.pid, "SIGKILL")
  } catch {
    try {
      child.kill("SIGKILL")
    } catch {}
  }
}

// Runs `<hook> <subcommand>` with `payload` as JSON on stdin. Resolves to { stdout, stderr } on a
// clean exit, or past `timeoutMs` to the answer line if one was written; to null on any failure;
// never rejects.
function call(subcommand, payload, timeoutMs) {
  return new Promise((resolve) => {
    let settled = false
    let timer
    const finish = (value) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve(value)
    }
    try {
      // Own process group, so a deadline kills the executable and anything it started.
      const child = spawn(hookCommand(), [subcommand], { stdio: ["pipe", "pipe", "pipe"], detached: true })
      timer = setTimeout(() => {
        killGroup(child)
        // An answer line already written stands (the executable may still be busy with work it
        // does after answering); anything else means "change nothing".
        const text = Buffer.concat(out).toString("utf8")
        const end = text.indexOf("\n")
        finish(end >= 0 && outBytes <= MAX_STDOUT_BYTES ? { stdout: text.slice(0, end + 1), stderr: "" } : null)
      }, timeoutMs)
      const out = []
      let outBytes = 0
      const err = []
      child.stdout.on("data", (chunk) => {
        outBytes += chunk.length
        if (outBytes <= MAX_STDOUT_BYTES) out.push(chunk)
      })
      child.stderr.on("data", (chunk) => {
        if (err.length < 64) err.push(chunk)
      })
      child.on("error", () => finish(null))
      child.on("close", (code) => {
        if (code !== 0 || outBytes > MAX_STDOUT_BYTES) return finish(null)
        finish({ stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(err).toString("utf8") })
      })
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(payload))
    } catch {
      finish(null)
    }
  })
}

// Runs `<hook> <subcommand>` synchronously, output discarded, killed past `timeoutMs`. For events
// after which OpenCode may exit at once (`opencode session delete`), where an asynchronous write
// to the child's stdin would never happen. Never throws.
function callSync(subcommand, payload, timeoutMs) {
  try {
    spawnSync(hookCommand(), [subcommand], {
      input: JSON.stringify(payload),
      stdio: ["pipe", "ignore", "ignore"],
      timeout: timeoutMs,
      killSignal: "SIGKILL",
    })
  } catch {}
}

function withTimeout(promise, ms) {
  let timer
  return Promise.race([
    promise,
    new Promise((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

// Whether a message is, or (from an earlier copy of this file) carries, our context.
function carriesOurs(message) {
  if (typeof message?.info?.id === "string" && message.info.id.startsWith(MESSAGE_ID_PREFIX)) return true
  return Array.isArray(message?.parts) && message.parts.some((p) => typeof p?.id === "string" && p.id.startsWith(PART_ID_PREFIX))
}

function textParts(parts) {
  if (!Array.isArray(parts)) return []
  return parts
    .filter((p) => p && p.type === "text")
    .map((p) => ({ type: "text", text: p.text, synthetic: p.synthetic === true }))
}

// `powercontext doctor opencode` (the official CLI) starts `opencode serve` with these two
// variables and waits for the nonce: proof that OpenCode loaded this plugin. Exclusive create,
// owner-only; a failure only means the probe fails.
function answerActivationProbe() {
  try {
    const path = process.env.POWERCONTEXT_OPENCODE_ACTIVATION_PROBE_PATH?.trim()
    const nonce = process.env.POWERCONTEXT_OPENCODE_ACTIVATION_PROBE_NONCE?.trim()
    if (!path || !nonce) return
    writeFileSync(path, nonce, { encoding: "utf8", flag: "wx", mode: 0o600 })
  } catch {}
}

export const PowerContextPlugin = async (ctx) => {
  answerActivationProbe()
  // The executable's diagnostics are content-free JSON lines; they go to OpenCode's log.
  const log = (result) => {
    try {
      const lines = (result?.stderr ?? "").split("\n").filter((l) => l.trim() !== "").slice(0, MAX_LOGGED_LINES)
      for (const message of lines) {
        const level = /"outcome":"(skipped|empty)"/.test(message) ? "debug" : "warn"
        Promise.resolve(ctx?.client?.app?.log?.({ body: { service: SERVICE, level, message } })).catch(() => {})
      }
    } catch {}
  }

  // A line in the executable's diagnostic shape, for what only the shim can see.
  const note = (outcome, detail) =>
    log({ stderr: JSON.stringify({ component: "powercontext.opencode.state", event: "state", outcome, detail }) })

  // Each session's current turn, in memory only (a context never touches the disk). `chat.message`
  // claims the session before its `prepare` runs, so nothing prepared for an earlier message can be
  // served from then on, whatever the outcome; the answer of that same run (if no newer message
  // claimed the session meanwhile) becomes the turn: the part text and the exact session and
  // message ids the executable named. The transform only matches those ids.
  const turns = new Map()
  let claims = 0
  const claim = (sessionID) => {
    const ticket = ++claims
    turns.delete(sessionID)
    turns.set(sessionID, { ticket })
    if (turns.size > MAX_KNOWN_DIRECTORIES) turns.delete(turns.keys().next().value)
    return ticket
  }
  const settle = (sessionID, ticket, answer) => {
    const text = answer?.text
    if (typeof text !== "string" || text === "") return
    // An executable older than this file answers the context alone: it cannot be matched to a
    // message, so it is never injected.
    if (typeof answer.session_id !== "string" || typeof answer.message_id !== "string") {
      return note("version_mismatch", "executable_older_than_plugin")
    }
    const turn = turns.get(sessionID)
    if (answer.session_id !== sessionID || turn?.ticket !== ticket) return note("skipped", "stale_turn")
    turn.messageID = answer.message_id
    turn.text = text
  }

  // Session directories as OpenCode announced them (the workspace the scope is derived from).
  const directories = new Map()
  const remember = (id, directory) => {
    if (typeof id !== "string" || typeof directory !== "string") return
    directories.delete(id)
    directories.set(id, directory)
    if (directories.size > MAX_KNOWN_DIRECTORIES) directories.delete(directories.keys().next().value)
  }
  const directoryOf = async (sessionID) => {
    if (directories.has(sessionID)) return directories.get(sessionID)
    try {
      const found = await withTimeout(ctx?.client?.session?.get?.({ path: { id: sessionID } }), SESSION_LOOKUP_TIMEOUT_MS)
      const directory = found?.data?.directory
      remember(sessionID, directory)
      return typeof directory === "string" ? directory : undefined
    } catch {
      return undefined
    }
  }

  return {
    tool: explicitTools(),
    config: askBeforeMutating,
    "chat.message": async (input, output) => {
      try {
        const sessionID = input?.sessionID ?? output?.message?.sessionID
        if (typeof sessionID !== "string") return
        const ticket = claim(sessionID)
        const directory = await directoryOf(sessionID)
        const result = await call(
          "prepare",
          {
            session_id: sessionID,
            input_message_id: input?.messageID,
            message_id: output?.message?.id,
            created_ms: output?.message?.time?.created,
            parts: textParts(output?.parts),
            directory,
          },
          prepareTimeoutMs(),
        )
        log(result)
        if (!result || result.stdout.trim() === "") return
        settle(sessionID, ticket, JSON.parse(result.stdout))
      } catch {}
    },

    // Gives the request the prepared context as a message of its own, right after the latest user
    // message, when that is exactly the message it was prepared for and the request does not carry
    // it yet (the transform may run twice on the same request). The user's message itself is never
    // touched: OpenCode hands title generation the same message objects and array, and converts
    // them later, so anything added to the message would reach the title request too; the title
    // only takes the history up to the first user message that is not all synthetic, which leaves
    // this one out. Only the request being sent changes, never the transcript, so every model
    // request of the turn gets the context once and a later turn never sees it. Starts no process.
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        const messages = Array.isArray(output?.messages) ? output.messages : []
        if (messages.some(carriesOurs)) return
        let at = messages.length - 1
        while (at >= 0 && messages[at]?.info?.role !== "user") at--
        const info = messages[at]?.info
        if (typeof info?.sessionID !== "string") return
        const turn = turns.get(info.sessionID)
        if (typeof turn?.text !== "string" || turn.messageID !== info.id) return
        const stamp = `${Date.now()}`
        messages.splice(at + 1, 0, {
          // The user message's own fields (agent, model, time), so whatever reads the request
          // after us sees an ordinary user message; our own id, never stored anywhere.
          info: { ...info, id: MESSAGE_ID_PREFIX + stamp },
          parts: [
            {
              id: PART_ID_PREFIX + stamp,
              sessionID: info.sessionID,
              messageID: MESSAGE_ID_PREFIX + stamp,
              type: "text",
              text: turn.text,
              synthetic: true,
            },
          ],
        })
      } catch {}
    },

    event: async ({ event } = {}) => {
      try {
        const type = event?.type
        const props = event?.properties ?? {}
        if (type === "session.created" || type === "session.updated") {
          remember(props.info?.id, props.info?.directory)
        } else if (type === "session.deleted") {
          const id = props.sessionID ?? props.info?.id
          if (typeof id !== "string") return
          directories.delete(id)
          turns.delete(id)
          callSync("forget", { session_id: id }, LOCAL_TIMEOUT_MS)
        } else if (type === "session.compacted") {
          // The next message bootstraps the session again (lifecycle `compact`).
          const id = props.sessionID ?? props.info?.id
          if (typeof id !== "string") return
          callSync("compacted", { session_id: id }, LOCAL_TIMEOUT_MS)
        }
      } catch {}
    },
  }
}

// ---- Explicit operations: the pc_* tools -------------------------------------------------------
// Each tool runs `powercontext-hooks op <name>` (CLI_COMMAND, or POWERCONTEXT_HOOKS_CLI), made from
// the CLI's one operations table rendered in at install time. Unlike the hooks they never fail
// open: a failure is a tool error with its code. A mutating tool first awaits context.ask
// (permission "powercontext"); a denial is OpenCode's own error and nothing is run.

const CLI_COMMAND = "{{cli_command}}"
const CLI_COMMAND_VAR = "POWERCONTEXT_HOOKS_CLI"
const OPERATIONS = "{{operations}}"
// The CLI ends a call at 15 s; this only catches a CLI that cannot.
const OP_TIMEOUT_MS = 20000

function cliCommand() {
  const override = process.env[CLI_COMMAND_VAR]
  if (typeof override === "string" && override.trim() !== "") return override.trim()
  return CLI_COMMAND.startsWith("{") ? "powercontext-hooks" : CLI_COMMAND
}

// Runs the CLI with `argv` and `args` as JSON on stdin; its one JSON answer, or a failure in the
// same shape. Never rejects.
function runOp(name, argv, args) {
  return new Promise((resolve) => {
    const failed = (code, message) => resolve({ ok: false, operation: name, code, message })
    let timer
    try {
      const child = spawn(cliCommand(), argv, { stdio: ["pipe", "pipe", "ignore"], detached: true })
      const out = []
      let bytes = 0
      timer = setTimeout(() => {
        killGroup(child)
        failed("timeout", "powercontext-hooks did not answer in time")
      }, OP_TIMEOUT_MS)
      child.stdout.on("data", (chunk) => {
        bytes += chunk.length
        if (bytes <= MAX_STDOUT_BYTES) out.push(chunk)
      })
      child.on("error", () => {
        clearTimeout(timer)
        failed("config_error", `powercontext-hooks could not run; set ${CLI_COMMAND_VAR} or run setup again`)
      })
      child.on("close", () => {
        clearTimeout(timer)
        try {
          const answer = JSON.parse(Buffer.concat(out).toString("utf8").trim())
          if (answer && typeof answer === "object" && typeof answer.ok === "boolean") return resolve(answer)
        } catch {}
        failed("invalid_response", "powercontext-hooks gave no answer")
      })
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify(args))
    } catch {
      clearTimeout(timer)
      failed("config_error", "powercontext-hooks could not run")
    }
  })
}

// OpenCode allows a permission it has no rule for without asking: unless the user configured
// `permission.powercontext`, make it `ask`, so a mutating tool is asked about (and rejected where
// nobody can answer, as in `opencode run`).
async function askBeforeMutating(config) {
  try {
    if (!config || typeof config !== "object") return
    if (config.permission === undefined) config.permission = {}
    if (typeof config.permission === "object" && config.permission !== null && config.permission.powercontext === undefined) {
      config.permission.powercontext = "ask"
    }
  } catch {}
}

function explicitTools() {
  let operations = []
  try {
    const list = JSON.parse(OPERATIONS)
    if (Array.isArray(list)) operations = list
  } catch {}
  const tools = {}
  for (const op of operations) {
    // Plain JSON-schema arguments (no zod at run time): OpenCode lists them as required and
    // hands every argument the model gives through unvalidated; the CLI checks them.
    const args = {}
    for (const field of op.args_required ?? []) args[field] = { description: field }
    tools[op.tool] = {
      description: op.mutates ? `${op.summary} Changes durable project context: asks for permission first.` : op.summary,
      args,
      async execute(params, context) {
        // Whatever the model put in its arguments, only the permission answer confirms.
        const { confirmed: _ignored, ...rest } = params && typeof params === "object" ? params : {}
        if (op.mutates) {
          await context.ask({ permission: "powercontext", patterns: [op.name], always: [], metadata: { operation: op.name } })
        }
        const argv = ["op", op.name, "--json", "--host", "opencode"]
        if (typeof context?.directory === "string" && context.directory !== "") argv.push("--cwd", context.directory)
        if (op.mutates) argv.push("--confirmed")
        const result = await runOp(op.name, argv, rest)
        const text = JSON.stringify(result)
        if (result.ok !== true) throw new Error(text)
        return text
      },
    }
  }
  return tools
}
