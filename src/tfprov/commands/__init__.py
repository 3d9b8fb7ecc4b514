"""The commands cli.py dispatches to: each parses nothing (cli does), runs a plan through execute.run_plan (or acts on
a local cloud), then draws the views the plan names (plans.yml) with the terminal renderer."""
