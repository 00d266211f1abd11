// PowerContext for Kimi Code: `node scripts/status.mjs` prints what the hooks recorded
// (`powercontext-hooks status --json`), or says why it cannot.
import { observations } from "../shared/observations.mjs"

const status = await observations()
if (status === null) {
  console.error("powercontext-hooks status gave nothing: is powercontext-hooks still installed?")
  process.exitCode = 1
} else {
  console.log(JSON.stringify(status, null, 2))
}
