"""KAI scheduling system for Kubernetes GPU clusters."""
