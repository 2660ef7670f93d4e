"""Customer onboarding: the FlowForge sample DAG."""
