"""The LLM metadata agent (`agent`) and the confined, read-only file tools it calls (`tools`)."""

from schedmate.advisor.agent.agent import (
    AgentResult,
    AgentStep,
    AgentTurn,
    MetadataAgent,
    answer_model,
    step_model,
)
from schedmate.advisor.agent.tools import JobDirTools, Tool, ToolError

__all__ = [
    "AgentResult",
    "AgentStep",
    "AgentTurn",
    "MetadataAgent",
    "answer_model",
    "step_model",
    "JobDirTools",
    "Tool",
    "ToolError",
]
