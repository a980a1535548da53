"""The client stub of memnest.proto, typed.

grpcio-tools writes types for the messages (memnest_pb2.pyi) but none for the stub in
memnest_pb2_grpc.py, so a strictly checked caller would see every answer as Any. `Stub` names
what each call takes and returns; `connect` is the one place the untyped class is built.
"""
from collections.abc import Iterator
from typing import Protocol, cast

import grpc
from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc


class Stub(Protocol):
    def ListTools(self, request: pb.ListToolsRequest, *,
                  timeout: float | None = None) -> pb.ListToolsResponse: ...

    def CallTool(self, request: pb.CallToolRequest, *,
                 timeout: float | None = None) -> pb.CallToolResponse: ...

    def CallToolStream(self, request: pb.CallToolRequest, *,
                       timeout: float | None = None) -> Iterator[pb.CallToolEvent]: ...

    def Status(self, request: pb.StatusRequest, *,
               timeout: float | None = None) -> pb.StatusResponse: ...

    def Shutdown(self, request: pb.ShutdownRequest, *,
                 timeout: float | None = None) -> pb.ShutdownResponse: ...

    def Session(self, frames: Iterator[pb.SessionFrame], *,
                timeout: float | None = None) -> Iterator[pb.SessionFrame]: ...


def connect(channel: grpc.Channel) -> Stub:
    return cast(Stub, pb_grpc.MemnestStub(channel))
