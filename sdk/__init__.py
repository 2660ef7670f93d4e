"""FlowForge: durable workflows for Python."""
