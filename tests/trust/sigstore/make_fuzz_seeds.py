"""Seeds for fuzz/sigstore_bundle_fuzz: a throw-away trusted root and valid bundles (each
shape the verifier accepts) over the harness's fixed artifact, so mutations start deep in
the checks rather than at the JSON parser. Verification is relative to the bundles' own
signed times, so committed seeds stay valid.

Usage: make_fuzz_seeds.py KEYDIR ROOT_OUT SEED_DIR
"""

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import test_signer  # noqa: E402

ARTIFACT = b"kernelhub sigstore fuzz artifact\n"  # fuzz/sigstore_bundle_fuzz.cpp signs the same


def main(argv: list[str]) -> int:
    keydir, root_out, seed_dir = Path(argv[1]), Path(argv[2]), Path(argv[3])
    instance = test_signer.init(keydir)
    shutil.copyfile(keydir / "trusted_root.json", root_out)
    seed_dir.mkdir(parents=True, exist_ok=True)
    shapes = {
        "v03-rekor1": dict(rekor="v1", bundle_version="0.3"),
        "v03-rekor1-tsa": dict(rekor="v1", bundle_version="0.3", tsa=True),
        "v03-rekor2-tsa": dict(rekor="v2", bundle_version="0.3"),
        "v02-rekor1": dict(rekor="v1", bundle_version="0.2"),
        "v01-rekor1": dict(rekor="v1", bundle_version="0.1"),
    }
    for name, options in shapes.items():
        bundle = instance.sign(ARTIFACT, **options)
        (seed_dir / f"{name}.json").write_text(json.dumps(bundle))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
