"""PowerContext's WorkBuddy UserPromptSubmit hook, in the file the official installer runs
(`python3 <WorkBuddy home>/hooks/workbuddy_powercontext_hook.py`): it only hands the event on stdin
to the native powercontext-hook-workbuddy executable rendered by `powercontext-hooks package`,
which recalls, injects, captures and fails open. It must never block a prompt itself."""

import os
import sys

HOOK = {{hook_path}}

if __name__ == "__main__":
    try:
        os.execv(HOOK, [HOOK])
    except OSError:
        # Fail open: a missing or unrunnable hook leaves the prompt as it is.
        sys.exit(0)
