#!/usr/bin/python3
"""A CRI client making the calls kubelet makes (for the Kubernetes scenarios; kubelet and crictl
are not in Debian). Messages come from cri.proto through `protoc --python_out` (into the folder
named by CRI_PY, which the caller makes); the calls go over gRPC (python3-grpcio) to the runtime's
socket.

  cri_client.py SOCKET version
  cri_client.py SOCKET pull IMAGE                         prints the image's reference
  cri_client.py SOCKET run-pod POD.json                   prints the pod's id
  cri_client.py SOCKET create POD_ID CONTAINER.json POD.json   prints the container's id
  cri_client.py SOCKET start|status|stop|remove CONTAINER_ID
  cri_client.py SOCKET checkpoint CONTAINER_ID ARCHIVE [TIMEOUT_S]
  cri_client.py SOCKET stop-pod|remove-pod POD_ID

POD.json is a PodSandboxConfig and CONTAINER.json a ContainerConfig in protobuf's JSON mapping
(field names as in cri.proto). `status` prints "STATE EXIT_CODE REASON" (STATE as CRI names it).
A failed call exits 1 with the runtime's error message on stderr.
"""
import os
import sys

sys.path.insert(0, os.environ.get("CRI_PY", os.path.dirname(os.path.abspath(__file__))))

import grpc  # noqa: E402
from google.protobuf import json_format  # noqa: E402

import cri_pb2 as cri  # noqa: E402


def call(channel, service, method, request, response_type, timeout=300):
    stub = channel.unary_unary(f"/runtime.v1.{service}/{method}",
                               request_serializer=lambda m: m.SerializeToString(),
                               response_deserializer=response_type.FromString)
    return stub(request, timeout=timeout)


def runtime(channel, method, request, timeout=300):
    response_type = getattr(cri, method + "Response")
    return call(channel, "RuntimeService", method, request, response_type, timeout)


def load(path, message_type):
    try:
        with open(path, encoding="utf-8") as f:
            return json_format.Parse(f.read(), message_type())
    except (OSError, json_format.ParseError) as e:
        sys.exit(f"cri_client.py: {path}: not a {message_type.__name__} in JSON: {e}")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    socket, command, args = argv[1], argv[2], argv[3:]
    channel = grpc.insecure_channel("unix://" + os.path.abspath(socket))
    need = {"version": 0, "pull": 1, "run-pod": 1, "create": 3, "start": 1, "status": 1,
            "stop": 1, "remove": 1, "checkpoint": 2, "stop-pod": 1, "remove-pod": 1}
    if command not in need:
        sys.exit(f"cri_client.py: unknown command '{command}'\n{__doc__}")
    if len(args) < need[command]:
        sys.exit(f"cri_client.py: {command} needs {need[command]} argument(s)\n{__doc__}")
    if command == "version":
        r = runtime(channel, "Version", cri.VersionRequest(version="v1"))
        print(r.runtime_name, r.runtime_version, r.runtime_api_version)
    elif command == "pull":
        r = call(channel, "ImageService", "PullImage",
                 cri.PullImageRequest(image=cri.ImageSpec(image=args[0])), cri.PullImageResponse)
        print(r.image_ref)
    elif command == "run-pod":
        r = runtime(channel, "RunPodSandbox",
                    cri.RunPodSandboxRequest(config=load(args[0], cri.PodSandboxConfig)))
        print(r.pod_sandbox_id)
    elif command == "create":
        r = runtime(channel, "CreateContainer", cri.CreateContainerRequest(
            pod_sandbox_id=args[0], config=load(args[1], cri.ContainerConfig),
            sandbox_config=load(args[2], cri.PodSandboxConfig)))
        print(r.container_id)
    elif command == "start":
        runtime(channel, "StartContainer", cri.StartContainerRequest(container_id=args[0]))
    elif command == "status":
        s = runtime(channel, "ContainerStatus",
                    cri.ContainerStatusRequest(container_id=args[0])).status
        print(cri.ContainerState.Name(s.state), s.exit_code, s.reason or "-")
    elif command == "stop":
        runtime(channel, "StopContainer", cri.StopContainerRequest(container_id=args[0], timeout=10))
    elif command == "remove":
        runtime(channel, "RemoveContainer", cri.RemoveContainerRequest(container_id=args[0]))
    elif command == "checkpoint":
        seconds = int(args[2]) if len(args) > 2 else 120
        runtime(channel, "CheckpointContainer", cri.CheckpointContainerRequest(
            container_id=args[0], location=os.path.abspath(args[1]), timeout=seconds),
            timeout=seconds + 30)
    elif command == "stop-pod":
        runtime(channel, "StopPodSandbox", cri.StopPodSandboxRequest(pod_sandbox_id=args[0]))
    elif command == "remove-pod":
        runtime(channel, "RemovePodSandbox", cri.RemovePodSandboxRequest(pod_sandbox_id=args[0]))


if __name__ == "__main__":
    try:
        main(sys.argv)
    except grpc.RpcError as e:
        sys.exit(f"cri_client.py {' '.join(sys.argv[2:4])}: {e.code().name}: {e.details()}")
