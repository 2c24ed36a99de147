{
  description = "boatload: reruns five published small-file file-system studies and writes the paper";

  # The uv path (`uv sync`, `make reproduce`) and this flake install the same
  # Python environment: both read uv.lock. uv2nix turns uv.lock into Nix
  # derivations; pyproject-build-systems supplies the PEP 517 build backends
  # (hatchling for boatload itself) that uv.lock does not record.
  inputs = {
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

    pyproject-nix = {
      url = "github:pyproject-nix/pyproject.nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };

    uv2nix = {
      url = "github:pyproject-nix/uv2nix";
      inputs.pyproject-nix.follows = "pyproject-nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };

    pyproject-build-systems = {
      url = "github:pyproject-nix/build-system-pkgs";
      inputs.pyproject-nix.follows = "pyproject-nix";
      inputs.uv2nix.follows = "uv2nix";
      inputs.nixpkgs.follows = "nixpkgs";
    };
  };

  outputs =
    {
      nixpkgs,
      pyproject-nix,
      uv2nix,
      pyproject-build-systems,
      ...
    }:
    let
      inherit (nixpkgs) lib;

      # Loop devices, mounts and cgroups: the studies only run on Linux.
      systems = [
        "x86_64-linux"
        "aarch64-linux"
      ];
      forAllSystems = lib.genAttrs systems;

      # The Python environment is built from uv.lock and nothing else.
      workspace =
        assert lib.assertMsg (builtins.pathExists ./uv.lock) "uv.lock is missing: run `uv lock`";
        uv2nix.lib.workspace.loadWorkspace { workspaceRoot = ./.; };

      # Prefer the binary wheels uv.lock pins (numba, llvmlite, polars,
      # vl-convert-python, typst are manylinux wheels); uv2nix adds
      # autoPatchelfHook and the manylinux libraries to every wheel build.
      overlay = workspace.mkPyprojectOverlay { sourcePreference = "wheel"; };

      # Editable install of boatload for the dev shell ($REPO_ROOT is set in
      # its shellHook).
      editableOverlay = workspace.mkEditablePyprojectOverlay { root = "$REPO_ROOT"; };

      perSystem =
        system:
        let
          pkgs = nixpkgs.legacyPackages.${system};

          # pyproject.toml: requires-python = ">=3.11,<3.12"
          python = pkgs.python311;

          # Every program the studies run: the `nix` column of TOOLS in
          # src/boatload/base/tools.py. tests/test_nix.py fails if the two drift.
          systemTools = [
            pkgs.e2fsprogs
            pkgs.xfsprogs
            pkgs.btrfs-progs
            pkgs.util-linux
            pkgs.fio
            pkgs.bonnie
            pkgs.gnutar
            pkgs.unzip
            pkgs.zip
            pkgs.coreutils
            pkgs.nbdkit
            pkgs.libnbd
            pkgs.fuse3
          ];

          worker = pkgs.callPackage ./nix/worker.nix { };

          # Build fixes uv.lock cannot express (it carries no build metadata).
          pyprojectOverrides = final: prev: {
            # boatload itself (hatchling, from pyproject-build-systems): only
            # the files the wheel needs, so data or notebook edits do not
            # rebuild the environment.
            boatload = prev.boatload.overrideAttrs (old: {
              src = lib.fileset.toSource {
                root = ./.;
                fileset = lib.fileset.unions [
                  ./pyproject.toml
                  ./README.md
                  ./src
                ];
              };
            });

            # The numba wheel's TBB threading layer links libtbb.so.12, which
            # is not part of the manylinux policy; autoPatchelf needs it.
            numba = prev.numba.overrideAttrs (old: {
              buildInputs = (old.buildInputs or [ ]) ++ [ pkgs.onetbb ];
            });

            # connection-pool (a snakemake dependency) has no wheel, only a
            # setup.py sdist: give it setuptools.
            connection-pool = prev.connection-pool.overrideAttrs (old: {
              nativeBuildInputs = (old.nativeBuildInputs or [ ]) ++ final.resolveBuildSystem { setuptools = [ ]; };
            });
          };

          pythonSet =
            (pkgs.callPackage pyproject-nix.build.packages {
              inherit python;
            }).overrideScope
              (
                lib.composeManyExtensions [
                  pyproject-build-systems.overlays.wheel
                  overlay
                  pyprojectOverrides
                ]
              );

          venv = pythonSet.mkVirtualEnv "boatload-env" workspace.deps.default;

          editablePythonSet = pythonSet.overrideScope (
            lib.composeManyExtensions [
              editableOverlay
              (final: prev: {
                boatload = prev.boatload.overrideAttrs (old: {
                  src = lib.fileset.toSource {
                    root = ./.;
                    fileset = lib.fileset.unions [
                      ./pyproject.toml
                      ./README.md
                      ./src/boatload/__init__.py
                    ];
                  };
                  # hatchling needs `editables` to build an editable wheel.
                  nativeBuildInputs = old.nativeBuildInputs ++ final.resolveBuildSystem { editables = [ ]; };
                });
              })
            ]
          );

          editableVenv = editablePythonSet.mkVirtualEnv "boatload-dev-env" workspace.deps.all;

          runtimeInputs = [
            venv
            worker
            pkgs.gnumake
          ]
          ++ systemTools;

          runtimeEnv = {
            BOATLOAD_WORKER = lib.getExe worker;
            BOATLOAD_DEVMODEL_DIR = "${worker}/lib/devmodel";
          };

          # `nix run .#reproduce` == `make reproduce`: the same Snakefile, run
          # from the current directory (the user's clone); `-- --configfile
          # config/ci.yaml` picks another scale, `-- --profile slurm` the
          # fleet (the SLURM executor comes from uv.lock; sbatch, squeue and
          # srun are the cluster's own, from the PATH the app extends).
          reproduce = pkgs.writeShellApplication {
            name = "boatload-reproduce";
            inherit runtimeInputs runtimeEnv;
            text = ''
              # The same driver as `make reproduce`: preflight, lock, progress, cleanup.
              exec boatload reproduce "$@"
            '';
          };

          # `nix run .#figure -- STUDY` == `make figure STUDY=...`
          figure = pkgs.writeShellApplication {
            name = "boatload-figure";
            inherit runtimeInputs runtimeEnv;
            text = ''
              if [ "$#" -lt 1 ]; then
                echo "usage: nix run .#figure -- STUDY" >&2
                exit 2
              fi
              exec boatload figure "$@"
            '';
          };

          # `nix run .#lab` == `make lab`
          lab = pkgs.writeShellApplication {
            name = "boatload-lab";
            inherit runtimeInputs runtimeEnv;
            text = ''
              exec jupyter lab "$@"
            '';
          };

          mkApp = drv: description: {
            type = "app";
            program = lib.getExe drv;
            meta = { inherit description; };
          };
        in
        {
          packages = {
            inherit worker;
            python = venv;
            default = pkgs.symlinkJoin {
              name = "boatload";
              paths = [
                reproduce
                figure
                lab
              ]
              ++ runtimeInputs;
            };
          };

          apps = {
            reproduce = mkApp reproduce "Run every study (snakemake on config/config.yaml), then clean up";
            figure = mkApp figure "Re-run one study's notebook and rebuild the paper: nix run .#figure -- STUDY";
            lab = mkApp lab "JupyterLab in boatload's Python environment";
            default = mkApp reproduce "Run every study (snakemake on config/config.yaml), then clean up";
          };

          devShells.default = pkgs.mkShell {
            packages = [
              editableVenv
              pkgs.uv
              pkgs.gcc
              pkgs.gnumake
              pkgs.git
              pkgs.nixfmt
            ]
            ++ systemTools;
            env = {
              # uv, if used inside the shell, must not replace the Nix environment.
              UV_NO_SYNC = "1";
              UV_PYTHON = editablePythonSet.python.interpreter;
              UV_PYTHON_DOWNLOADS = "never";
            };
            shellHook = ''
              unset PYTHONPATH
              REPO_ROOT=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
              export REPO_ROOT
              # The worker as `make -C native` builds it in this clone, so that
              # the shell still opens while the C code is being worked on.
              export BOATLOAD_WORKER="$REPO_ROOT/native/build/boatload-worker"
              export BOATLOAD_DEVMODEL_DIR="$REPO_ROOT/native/build"
            '';
          };

          checks = {
            # The worker build runs the C tests (doCheck).
            inherit worker;

            python-imports = pkgs.runCommand "boatload-python-imports" { nativeBuildInputs = [ venv ]; } ''
              export HOME="$TMPDIR"
              python -c "import snakemake, snakemake_executor_plugin_slurm, papermill, polars, altair, numba, typst, vl_convert, boatload"
              touch "$out"
            '';

            # writeShellApplication runs shellcheck on the scripts.
            inherit reproduce figure lab;
          };

          formatter = pkgs.nixfmt;
        };

      bySystem = forAllSystems perSystem;
      pick = name: lib.mapAttrs (_: outputs: outputs.${name}) bySystem;
    in
    {
      packages = pick "packages";
      apps = pick "apps";
      devShells = pick "devShells";
      checks = pick "checks";
      formatter = pick "formatter";
    };
}
