// PowerContext for Kimi Code: the Server's MCP endpoint as the official installer configured it
// (`mcpServers.powercontext` in kimi.plugin.json, written from powercontext.json).
import { settings } from "./runtime.mjs"

/** `<server_url>/mcp`, or null when no Server URL was saved. */
export function mcpUrl() {
  const url = settings().server_url
  return typeof url === "string" && url ? `${url.replace(/\/+$/, "")}/mcp` : null
}
