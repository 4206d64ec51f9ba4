#!/usr/bin/python3
"""Pushes OCI images to a registry over the distribution API (for the Kubernetes scenarios: no
network, no buildah or skopeo here; the registry is docker-registry on 127.0.0.1).

  oci_image.py image REGISTRY REPO:TAG LAYER.tar [ENTRYPOINT...]
      one uncompressed layer and a config running ENTRYPOINT; prints the manifest's digest.
  oci_image.py checkpoint REGISTRY REPO:TAG ARCHIVE.tar CONTAINER_NAME
      a checkpoint image as Kubernetes users make one from kubelet's checkpoint archive
      (`buildah add` of the archive into an empty image, `buildah config --annotation
      org.criu.checkpoint.container.name=NAME`): the archive is the image's one layer, and the
      image is an OCI index carrying the annotation, which is where containerd looks for it
      (the manifest carries it too). Prints the index's digest.

REGISTRY is HOST:PORT (plain HTTP).
"""
import hashlib
import http.client
import json
import sys

CHECKPOINT_NAME = "org.criu.checkpoint.container.name"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
INDEX = "application/vnd.oci.image.index.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar"
PLATFORM = {"architecture": "amd64", "os": "linux"}


class Registry:
    def __init__(self, address, repo):
        self.address, self.repo = address, repo

    def request(self, method, path, body=None, headers=None, expect=(200, 201, 202)):
        conn = http.client.HTTPConnection(self.address, timeout=120)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            data = r.read()
        except OSError as e:
            sys.exit(f"oci_image.py: registry {self.address}: {method} {path}: {e}")
        finally:
            conn.close()
        if r.status not in expect:
            sys.exit(f"oci_image.py: registry {self.address}: {method} {path}: "
                     f"HTTP {r.status}: {data[:500].decode(errors='replace')}")
        return r, data

    def blob(self, data, media_type):
        """Uploads DATA (once: a blob already there is not sent again); its descriptor."""
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        r, _ = self.request("HEAD", f"/v2/{self.repo}/blobs/{digest}", expect=(200, 404))
        if r.status == 404:
            r, _ = self.request("POST", f"/v2/{self.repo}/blobs/uploads/", expect=(202,))
            location = r.getheader("Location")
            if location.startswith("http"):
                location = "/" + location.split("/", 3)[3]
            sep = "&" if "?" in location else "?"
            self.request("PUT", f"{location}{sep}digest={digest}", body=data,
                         headers={"Content-Type": "application/octet-stream"}, expect=(201,))
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    def manifest(self, document, media_type, tag=None):
        data = json.dumps(document, sort_keys=True).encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.request("PUT", f"/v2/{self.repo}/manifests/{tag or digest}", body=data,
                     headers={"Content-Type": media_type}, expect=(201,))
        return {"mediaType": media_type, "digest": digest, "size": len(data)}


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        sys.exit(f"oci_image.py: {path}: {e}")


def push_manifest(registry, layer_path, entrypoint, annotations, tag):
    layer_data = read(layer_path)
    layer = registry.blob(layer_data, LAYER)
    image_config = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if entrypoint:
        image_config["Entrypoint"] = entrypoint
    config = dict(PLATFORM, config=image_config,
                  rootfs={"type": "layers", "diff_ids": [layer["digest"]]})
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": registry.blob(json.dumps(config, sort_keys=True).encode(), CONFIG),
                "layers": [layer]}
    if annotations:
        manifest["annotations"] = annotations
    return registry.manifest(manifest, MANIFEST, tag)


def main(argv):
    if len(argv) < 5 or argv[1] not in ("image", "checkpoint"):
        sys.exit(__doc__)
    kind, address, ref, path = argv[1:5]
    repo, sep, tag = ref.rpartition(":")
    if not sep or not repo or "/" in tag:
        sys.exit(f"oci_image.py: '{ref}' is not REPO:TAG")
    registry = Registry(address, repo)
    if kind == "image":
        print(push_manifest(registry, path, argv[5:], None, tag)["digest"])
        return
    if len(argv) != 6:
        sys.exit(f"oci_image.py: checkpoint needs REGISTRY REPO:TAG ARCHIVE CONTAINER_NAME\n{__doc__}")
    annotations = {CHECKPOINT_NAME: argv[5]}
    manifest = push_manifest(registry, path, None, annotations, None)
    index = {"schemaVersion": 2, "mediaType": INDEX,
             "manifests": [dict(manifest, platform=PLATFORM)], "annotations": annotations}
    print(registry.manifest(index, INDEX, tag)["digest"])


if __name__ == "__main__":
    main(sys.argv)
