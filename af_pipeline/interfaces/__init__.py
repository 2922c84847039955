"""What people and agents touch: the `af` command line (cli, commands/), the read model
(memory: `from af_pipeline import Memory`), the MCP server (mcp_server) and the QA harness (qa/)."""
