"""Agent backends: one small interface (`AgentBackend.turn`) over model APIs and the offline oracle."""
