// PowerContext for Pi: a thin shim around the `powercontext-hook-pi` executable.
//
// It owns only the mapping of Pi events to the executable (JSON on stdin, JSON on stdout) and the
// guards that keep Pi safe: every spawn has a hard deadline (the child's process group is killed
// past it), nothing here throws, and any error means "no change". Scope, recall, the injected
// text, capture, the secret filter and the pending-flush ledger are all decided in Rust.
//
// The executable is found through POWERCONTEXT_PI_HOOK_COMMAND (an absolute path), else the path
// rendered into HOOK_COMMAND below at install time, else `powercontext-hook-pi` on PATH.
//
// Explicit operations (the `pc_*` tools) run `powercontext-hooks op` (CLI_COMMAND below, or
// POWERCONTEXT_HOOKS_CLI): unlike the hooks they never fail open. A mutating tool asks with
// ctx.ui.confirm first; without a UI (`pi -p`) it answers confirmation_required and runs nothing.

import { spawn, type ChildProcess } from "node:child_process";

const HOOK_COMMAND = "{{hook_command}}";
// Spelled in pieces so rendering the template never rewrites this comparison.
const UNRENDERED = "{" + "{hook_command}" + "}";
const HOOK_COMMAND_ENV = "POWERCONTEXT_PI_HOOK_COMMAND";
const DEFAULT_HOOK = "powercontext-hook-pi";

// The executable ends itself at its budget (4 s by default for a prompt, 1 s for a flush); these
// outer deadlines only matter when it cannot (missing, hung, machine overloaded).
const START_DEADLINE_MS = 6000;
const FLUSH_DEADLINE_MS = 2500;
const START_DEADLINE_ENV = "POWERCONTEXT_PI_HOOK_TIMEOUT_MS";

// The explicit tools: the CLI that runs them and the operations they are made from (rendered at
// install time from the CLI's one table).
const CLI_COMMAND = "{{cli_command}}";
const CLI_COMMAND_ENV = "POWERCONTEXT_HOOKS_CLI";
const OPERATIONS = "{{operations}}";
// The CLI ends a call at 15 s; this outer deadline only matters when it cannot.
const OP_DEADLINE_MS = 20000;

const MAX_STDOUT_BYTES = 8 * 1024 * 1024;
const MAX_STDERR_BYTES = 64 * 1024;
const STATUS_KEY = "powercontext";

type HookResult =
  | { ok: true; stdout: string; stderr: string }
  | { ok: false; failure: "timeout" | "unavailable" | "aborted" | "error"; stderr: string };

function hookCommand(): string {
  const fromEnv = process.env[HOOK_COMMAND_ENV]?.trim();
  if (fromEnv) return fromEnv;
  if (HOOK_COMMAND !== UNRENDERED && HOOK_COMMAND.trim() !== "") return HOOK_COMMAND;
  return DEFAULT_HOOK;
}

function cliCommand(): string {
  const fromEnv = process.env[CLI_COMMAND_ENV]?.trim();
  if (fromEnv) return fromEnv;
  if (!CLI_COMMAND.startsWith("{") && CLI_COMMAND.trim() !== "") return CLI_COMMAND;
  return "powercontext-hooks";
}

type Operation = { name: string; tool: string; summary: string; mutates: boolean; args_required: string[] };

function operations(): Operation[] {
  try {
    const list = JSON.parse(OPERATIONS);
    return Array.isArray(list) ? list : [];
  } catch {
    return [];
  }
}

function startDeadlineMs(): number {
  const raw = Number(process.env[START_DEADLINE_ENV]);
  return Number.isInteger(raw) && raw >= 100 && raw <= 600_000 ? raw : START_DEADLINE_MS;
}

function killGroup(child: ChildProcess | undefined): void {
  if (!child) return;
  // The child leads its own process group (detached), so a wrapper script and whatever it
  // started go too. The background drainer our executable may start has a group of its own.
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    try {
      child.kill("SIGKILL");
    } catch {}
  }
  // A grandchild holding our pipes open must not keep Pi's event loop alive.
  for (const stream of [child.stdin, child.stdout, child.stderr]) {
    try {
      stream?.destroy();
    } catch {}
  }
  try {
    child.unref();
  } catch {}
}

/** Runs `<hook> <subcommand>` with `input` as JSON on stdin; always settles, never rejects. */
function runHook(
  subcommand: string,
  input: unknown,
  deadlineMs: number,
  signal?: AbortSignal,
  command: [string, string[]] = [hookCommand(), [subcommand]],
): Promise<HookResult> {
  return new Promise<HookResult>((resolve) => {
    let child: ChildProcess | undefined;
    let settled = false;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    const stderrText = () => Buffer.concat(err).toString("utf8");
    const finish = (result: HookResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      try {
        signal?.removeEventListener("abort", onAbort);
      } catch {}
      resolve(result);
    };
    const fail = (failure: "timeout" | "unavailable" | "aborted" | "error") => {
      killGroup(child);
      finish({ ok: false, failure, stderr: stderrText() });
    };
    const onAbort = () => fail("aborted");
    const timer = setTimeout(() => fail("timeout"), deadlineMs);
    try {
      if (signal?.aborted) return fail("aborted");
      child = spawn(command[0], command[1], {
        stdio: ["pipe", "pipe", "pipe"],
        detached: true,
        windowsHide: true,
      });
      child.on("error", (e: NodeJS.ErrnoException) =>
        fail(e?.code === "ENOENT" || e?.code === "EACCES" ? "unavailable" : "error"),
      );
      child.stdout?.on("data", (chunk: Buffer) => {
        outBytes += chunk.length;
        if (outBytes > MAX_STDOUT_BYTES) return fail("error");
        out.push(chunk);
      });
      child.stderr?.on("data", (chunk: Buffer) => {
        if (errBytes >= MAX_STDERR_BYTES) return;
        errBytes += chunk.length;
        err.push(chunk);
      });
      child.stdin?.on("error", () => {});
      child.stdout?.on("error", () => {});
      child.stderr?.on("error", () => {});
      child.on("close", () => finish({ ok: true, stdout: Buffer.concat(out).toString("utf8"), stderr: stderrText() }));
      signal?.addEventListener("abort", onAbort, { once: true });
      child.stdin?.end(JSON.stringify(input));
    } catch {
      fail("error");
    }
  });
}

/** The executable's content-free diagnostic lines, plus one of our own when the spawn failed. */
function diagnostics(result: HookResult): string[] {
  const lines: string[] = [];
  for (const line of result.stderr.split("\n")) {
    try {
      const value = JSON.parse(line);
      if (value && typeof value === "object" && typeof value.outcome === "string") lines.push(JSON.stringify(value));
    } catch {}
  }
  if (!result.ok) {
    const own: Record<string, string> = { component: "powercontext.pi.extension", event: "process" };
    if (result.failure === "unavailable") {
      own.outcome = "config_invalid";
      own.setting = HOOK_COMMAND_ENV;
      own.detail = "hook_unavailable";
    } else if (result.failure === "timeout") {
      own.outcome = "timeout";
    } else if (result.failure === "aborted") {
      own.outcome = "skipped";
      own.detail = "aborted";
    } else {
      own.outcome = "internal_error";
    }
    lines.push(JSON.stringify(own));
  }
  return lines;
}

/** Shows diagnostics where a Pi user sees them: the footer status with a UI, stderr without. */
function show(ctx: any, result: HookResult, clearWhenClean: boolean): void {
  try {
    const lines = diagnostics(result);
    if (ctx?.hasUI) {
      if (lines.length === 0) {
        if (clearWhenClean) ctx.ui?.setStatus?.(STATUS_KEY, undefined);
        return;
      }
      const outcomes = lines.map((l) => JSON.parse(l).outcome as string);
      ctx.ui?.setStatus?.(STATUS_KEY, `PowerContext: ${[...new Set(outcomes)].join(", ")}`);
    } else {
      for (const line of lines) process.stderr.write(`${line}\n`);
    }
  } catch {}
}

function safely<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

/** A failed explicit operation, in the CLI's result shape. */
function opFailure(name: string, code: string, message: string): Record<string, unknown> {
  return { ok: false, operation: name, code, message };
}

/** Runs `powercontext-hooks op <name>` for the project at `cwd`; the CLI's JSON answer. */
async function runOp(op: Operation, args: Record<string, unknown>, confirmed: boolean, cwd: unknown, signal?: AbortSignal) {
  const argv = ["op", op.name, "--json", "--host", "pi"];
  if (typeof cwd === "string" && cwd !== "") argv.push("--cwd", cwd);
  if (confirmed) argv.push("--confirmed");
  const result = await runHook("op", args, OP_DEADLINE_MS, signal, [cliCommand(), argv]);
  if (!result.ok) {
    const code = result.failure === "timeout" ? "timeout" : result.failure === "aborted" ? "cancelled" : "config_error";
    return opFailure(op.name, code, `powercontext-hooks could not run (${result.failure}); set ${CLI_COMMAND_ENV} or run setup again`);
  }
  try {
    const answer = JSON.parse(result.stdout.trim());
    if (answer && typeof answer === "object" && typeof answer.ok === "boolean") return answer;
  } catch {}
  return opFailure(op.name, "invalid_response", "powercontext-hooks gave no answer");
}

/** The `pc_*` tools: a mutation is confirmed by the user first, never by the model. */
function registerTools(pi: any): void {
  for (const op of operations()) {
    const properties: Record<string, unknown> = {};
    for (const field of op.args_required) properties[field] = { description: field };
    pi.registerTool({
      name: op.tool,
      label: `PowerContext ${op.name}`,
      description: op.mutates
        ? `${op.summary} Changes durable project context: the user is asked first.`
        : op.summary,
      parameters: { type: "object", properties, required: op.args_required, additionalProperties: true },
      async execute(_id: string, params: any, signal: any, _onUpdate: any, ctx: any) {
        // Whatever the model put in its arguments, only the user's answer confirms.
        const { confirmed: _ignored, ...args } = params && typeof params === "object" ? params : ({} as any);
        let result: Record<string, unknown>;
        if (op.mutates && !ctx?.hasUI) {
          result = opFailure(op.name, "confirmation_required", `${op.name} changes durable project context and there is no UI to ask; nothing was written`);
        } else {
          let allowed = true;
          if (op.mutates) {
            try {
              allowed = await ctx.ui.confirm("Allow PowerContext change?", `The ${op.name} operation changes durable project context. Continue?`);
            } catch {
              allowed = false;
            }
          }
          result = allowed
            ? await runOp(op, args, op.mutates, ctx?.cwd, signal)
            : opFailure(op.name, "cancelled", `${op.name} was not confirmed; nothing was written`);
        }
        const text = JSON.stringify(result);
        // Pi marks a tool result as an error only when execute throws.
        if (result.ok !== true) throw new Error(text);
        return { content: [{ type: "text", text }], details: result };
      },
    });
  }
}

export default function powercontext(pi: any): void {
  try {
    registerTools(pi);
  } catch {}

  // One flush at a time per extension instance: a boundary arriving while one runs shares it.
  let inflight: Promise<void> | undefined;
  const flush = (event: string, ctx: any, signal?: AbortSignal): Promise<void> => {
    if (inflight) return inflight;
    const session_id = safely(() => ctx.sessionManager.getSessionId()) ?? null;
    const running = runHook("flush", { event, session_id }, FLUSH_DEADLINE_MS, signal)
      .then((result) => show(ctx, result, false))
      .catch(() => {})
      .finally(() => {
        if (inflight === running) inflight = undefined;
      });
    inflight = running;
    return running;
  };

  pi.on("before_agent_start", async (event: any, ctx: any) => {
    try {
      const input = {
        prompt: typeof event?.prompt === "string" ? event.prompt : "",
        system_prompt: typeof event?.systemPrompt === "string" ? event.systemPrompt : null,
        cwd: typeof ctx?.cwd === "string" ? ctx.cwd : null,
        session_id: safely(() => ctx.sessionManager.getSessionId()) ?? null,
        branch_roles:
          safely(() => {
            const branch = ctx.sessionManager.getBranch();
            return Array.isArray(branch)
              ? branch.map((entry: any) => (typeof entry?.message?.role === "string" ? entry.message.role : null))
              : null;
          }) ?? null,
      };
      const result = await runHook("before-agent-start", input, startDeadlineMs(), ctx?.signal);
      show(ctx, result, true);
      if (!result.ok) return undefined;
      const line = result.stdout.trim();
      if (line === "") return undefined;
      const answer = JSON.parse(line);
      if (answer && typeof answer === "object" && typeof answer.systemPrompt === "string") {
        return { systemPrompt: answer.systemPrompt };
      }
    } catch {}
    return undefined;
  });

  // Not awaited, as upstream: the next prompt must not wait on extraction.
  pi.on("agent_end", (_event: any, ctx: any) => {
    void flush("agent_end", ctx);
    return undefined;
  });

  // Runs its own flush after any running one (the previous turn's `agent_end` flush is often
  // still running): only this event's run marks the session for a bootstrap after the compaction.
  pi.on("session_before_compact", async (event: any, ctx: any) => {
    try {
      if (inflight) await inflight;
    } catch {}
    await flush("session_before_compact", ctx, event?.signal);
    return undefined;
  });

  pi.on("session_before_switch", async (_event: any, ctx: any) => {
    await flush("session_before_switch", ctx, ctx?.signal);
    return undefined;
  });

  // Runs its own flush after any running one: at shutdown the executable also hands what is
  // still pending to its background drainer.
  pi.on("session_shutdown", async (_event: any, ctx: any) => {
    try {
      if (inflight) await inflight;
    } catch {}
    await flush("session_shutdown", ctx);
    return undefined;
  });
}
