// PowerContext for Kimi Code: the `UserPromptSubmit` hook the official installer declares
// (`node ./hooks/user_prompt_submit.mjs`). A thin shim: Kimi's payload goes to
// powercontext-hook-kimi-code unchanged and its one answer line comes back. Fails open: whatever
// happens, it exits 0 and the turn goes on.
import { runHook } from "../shared/runtime.mjs"

process.exitCode = 0
await runHook(process.stdin, process.stdout)
