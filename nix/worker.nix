# The C worker (native/), built with its own Makefile, the same way `make`
# builds it on the uv path: `make -C native` -> native/build/boatload-worker,
# and `make -C native test` runs the C tests (doCheck).
{
  lib,
  stdenv,
  nbdkit,
}:

stdenv.mkDerivation {
  pname = "boatload-worker";
  version = "0.1.0";

  # Only native/ goes into the store (minus a local build/ directory), so
  # editing Python, notebooks or the paper does not rebuild the worker.
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.difference ../native (lib.fileset.maybeMissing ../native/build);
  };

  # The device-model filter (native/devmodel/) compiles against nbdkit's
  # filter API header.
  buildInputs = [ nbdkit ];

  # stdenv's cc wrapper exports CC, which the Makefile picks up.
  buildPhase = ''
    runHook preBuild
    make -C native
    runHook postBuild
  '';

  doCheck = true;
  checkPhase = ''
    runHook preCheck
    make -C native test
    runHook postCheck
  '';

  installPhase = ''
    runHook preInstall
    install -Dm755 native/build/boatload-worker "$out/bin/boatload-worker"
    install -Dm755 native/build/devmodel.so "$out/lib/devmodel/devmodel.so"
    install -Dm755 native/build/devmodel-calc "$out/lib/devmodel/devmodel-calc"
    runHook postInstall
  '';

  meta = {
    description = "boatload's measuring worker: one workload per call, one JSON document out";
    mainProgram = "boatload-worker";
    license = lib.licenses.mit;
    platforms = lib.platforms.linux;
  };
}
