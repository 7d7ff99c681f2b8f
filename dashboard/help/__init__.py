"""The Help page: the glossary and a worked example of CE."""
