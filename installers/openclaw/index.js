// PowerContext for OpenClaw: a thin shim between OpenClaw's plugin hooks and the Rust executable
// `powercontext-hook-openclaw`, which makes every decision (prompt text, scope, recall, capture,
// secret filter, bootstrap). This file only maps OpenClaw events to the executable (JSON on stdin,
// JSON on stdout) and applies its answer.
//
// It never throws and never hangs: every call has a hard deadline, below OpenClaw's own 15 s
// budget for `before_prompt_build`, after which the executable's process group is killed, and any
// error, timeout or unreadable answer means "change nothing". An answer is applied only to the
// very event it was asked for (nothing is kept for a later turn), so a late or stale answer can
// never land in another prompt.
//
// The executable is found through POWERCONTEXT_OPENCLAW_HOOK_COMMAND (an absolute path), else the
// path rendered into HOOK_COMMAND below at install time, else `powercontext-hook-openclaw` on PATH.

import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";

const PLUGIN_ID = "memory-powercontext";
const HOOK_COMMAND = "{{hook_command}}";
// Spelled in pieces so rendering the template never rewrites this comparison.
const UNRENDERED = "{" + "{hook_command}" + "}";
const HOOK_COMMAND_VAR = "POWERCONTEXT_OPENCLAW_HOOK_COMMAND";
const DEFAULT_HOOK = "powercontext-hook-openclaw";

// The executable ends itself at its budget (4 s by default); this outer deadline only matters when
// it cannot (missing, hung, machine overloaded). OpenClaw gives `before_prompt_build` 15 s: ours
// always stays below it, so OpenClaw never has to abandon the hook itself.
const PROMPT_DEADLINE_MS = 6000;
const PROMPT_DEADLINE_MAX_MS = 14000;
const PROMPT_DEADLINE_VAR = "POWERCONTEXT_OPENCLAW_HOOK_TIMEOUT_MS";
// A boundary only touches local files (the executable gives itself 1 s).
const BOUNDARY_DEADLINE_MS = 2500;

const MAX_STDOUT_BYTES = 1 << 20;
const MAX_STDERR_BYTES = 64 * 1024;
const MAX_LOGGED_LINES = 8;
const MAX_HISTORY_ROLES = 10000;

function hookCommand() {
  const fromEnv = process.env[HOOK_COMMAND_VAR]?.trim();
  if (fromEnv) return fromEnv;
  if (HOOK_COMMAND !== UNRENDERED && HOOK_COMMAND.trim() !== "") return HOOK_COMMAND;
  return DEFAULT_HOOK;
}

function promptDeadlineMs() {
  const raw = Number(process.env[PROMPT_DEADLINE_VAR]);
  if (!Number.isInteger(raw) || raw < 100) return PROMPT_DEADLINE_MS;
  return Math.min(raw, PROMPT_DEADLINE_MAX_MS);
}

function killGroup(child) {
  if (!child) return;
  // The child leads its own process group (detached), so a wrapper script and whatever it started
  // go too. The background drainer our executable may start has a group of its own.
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
  // A grandchild holding our pipes open must not keep OpenClaw's event loop alive.
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    try {
      stream?.destroy();
    } catch {}
  }
  try {
    child.unref();
  } catch {}
}

// Runs `<hook> <subcommand>` with `input` as JSON on stdin. Resolves to { ok: true, stdout, stderr }
// on a clean exit, else to { ok: false, failure, stderr }; never rejects.
function runHook(subcommand, input, deadlineMs) {
  return new Promise((resolve) => {
    let child;
    let settled = false;
    const out = [];
    const err = [];
    let outBytes = 0;
    let errBytes = 0;
    const stderrText = () => Buffer.concat(err).toString("utf8");
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const fail = (failure) => {
      killGroup(child);
      finish({ ok: false, failure, stderr: stderrText() });
    };
    const timer = setTimeout(() => fail("timeout"), deadlineMs);
    try {
      child = spawn(hookCommand(), [subcommand], { stdio: ["pipe", "pipe", "pipe"], detached: true, windowsHide: true });
      child.on("error", (e) => fail(e?.code === "ENOENT" || e?.code === "EACCES" ? "unavailable" : "error"));
      child.stdout.on("data", (chunk) => {
        outBytes += chunk.length;
        if (outBytes > MAX_STDOUT_BYTES) return fail("error");
        out.push(chunk);
      });
      child.stderr.on("data", (chunk) => {
        if (errBytes >= MAX_STDERR_BYTES) return;
        errBytes += chunk.length;
        err.push(chunk);
      });
      child.stdin.on("error", () => {});
      child.stdout.on("error", () => {});
      child.stderr.on("error", () => {});
      child.on("close", (code) =>
        code === 0
          ? finish({ ok: true, stdout: Buffer.concat(out).toString("utf8"), stderr: stderrText() })
          : finish({ ok: false, failure: "error", stderr: stderrText() }),
      );
      child.stdin.end(JSON.stringify(input));
    } catch {
      fail("error");
    }
  });
}

// The executable's content-free diagnostic lines, plus one of our own when the spawn failed. Never
// prompt text, context or tokens: only lines that parse as the executable's outcome records.
function diagnostics(result) {
  const lines = [];
  for (const line of (result?.stderr ?? "").split("\n")) {
    try {
      const value = JSON.parse(line);
      if (value && typeof value === "object" && typeof value.outcome === "string") lines.push(value);
    } catch {}
  }
  if (result && !result.ok) {
    const own = { component: "powercontext.openclaw.plugin", event: "process" };
    if (result.failure === "unavailable") {
      own.outcome = "config_invalid";
      own.setting = HOOK_COMMAND_VAR;
      own.detail = "hook_unavailable";
    } else if (result.failure === "timeout") {
      own.outcome = "timeout";
    } else {
      own.outcome = "internal_error";
    }
    lines.push(own);
  }
  return lines.slice(0, MAX_LOGGED_LINES);
}

function log(api, result) {
  try {
    for (const line of diagnostics(result)) {
      const quiet = line.outcome === "skipped" || line.outcome === "empty";
      const text = `${PLUGIN_ID}: ${JSON.stringify(line)}`;
      if (quiet) api?.logger?.debug?.(text);
      else api?.logger?.warn?.(text);
    }
  } catch {}
}

function sessionOf(ctx) {
  for (const value of [ctx?.sessionId, ctx?.sessionKey]) {
    if (typeof value === "string" && value.trim() !== "") return value;
  }
  return null;
}

function historyRoles(messages) {
  if (!Array.isArray(messages)) return null;
  return messages.slice(-MAX_HISTORY_ROLES).map((m) => (typeof m?.role === "string" ? m.role : null));
}

// `powercontext-hooks doctor openclaw` loads OpenClaw's plugins with these two variables and waits
// for the nonce: proof that OpenClaw loaded this plugin. Exclusive create, owner-only; a failure
// only means the probe fails.
function answerActivationProbe() {
  try {
    const path = process.env.POWERCONTEXT_OPENCLAW_ACTIVATION_PROBE_PATH?.trim();
    const nonce = process.env.POWERCONTEXT_OPENCLAW_ACTIVATION_PROBE_NONCE?.trim();
    if (!path || !nonce) return;
    writeFileSync(path, nonce, { encoding: "utf8", flag: "wx", mode: 0o600 });
  } catch {}
}

export default {
  id: PLUGIN_ID,
  name: "PowerContext",
  description: "Project context from a PowerContext Server before each prompt; the prompt captured after",
  register(api) {
    answerActivationProbe();

    api.on("before_prompt_build", async (event, ctx) => {
      try {
        const input = {
          prompt: typeof event?.prompt === "string" ? event.prompt : "",
          cwd:
            typeof ctx?.workspaceDir === "string" && ctx.workspaceDir !== "" ? ctx.workspaceDir : process.cwd(),
          session_id: sessionOf(ctx),
          history_roles: historyRoles(event?.messages),
        };
        const result = await runHook("before-prompt-build", input, promptDeadlineMs());
        log(api, result);
        if (!result.ok) return undefined;
        const line = result.stdout.trim();
        if (line === "" || line.includes("\n")) return undefined;
        const answer = JSON.parse(line);
        if (answer && typeof answer === "object" && typeof answer.prependContext === "string" && answer.prependContext !== "") {
          return { prependContext: answer.prependContext };
        }
      } catch {}
      return undefined;
    });

    // Boundaries: the answer is out (pending captures go to the drainer), or what was injected is
    // about to be dropped (the next prompt bootstraps again). Awaited, bounded: a one-shot
    // `openclaw agent` may exit right after these events.
    const boundary = (name) => async (_event, ctx) => {
      try {
        const result = await runHook("boundary", { event: name, session_id: sessionOf(ctx) }, BOUNDARY_DEADLINE_MS);
        log(api, result);
      } catch {}
      return undefined;
    };
    for (const name of ["agent_end", "before_compaction", "before_reset", "session_end"]) {
      api.on(name, boundary(name));
    }
  },
};
