"""Stage 2: the Navigator, the Dev's tools, the Mentor, the Verifier and the Recorder."""
