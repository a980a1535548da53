"""Errors a tool reports to its caller: a stable code and one sentence a model can act on."""


class ToolError(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> ToolError:
    return ToolError("invalid_argument", message)


def not_found(message: str) -> ToolError:
    return ToolError("not_found", message)
