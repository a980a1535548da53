"""memnest-ctl tls init, tls client NAME: the certificates of a remote daemon (tls_setup.py)."""
import argparse
from pathlib import Path

from ..common import Command, Failure
from ..tls_setup import (
    CLIENT_DAYS,
    DEFAULT_PORT,
    SERVER_DAYS,
    TlsSetupError,
    allow,
    check_client_name,
    clients_file,
    default_dir,
    prepare_dir,
    write_authority,
    write_client,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="tls_action", required=True, metavar="ACTION",
                                    help="init: the CA and the daemon's certificate; client: "
                                         "one client's certificate")
    init = actions.add_parser("init", help="create a private CA and the daemon's server "
                              "certificate (SANs: localhost, 127.0.0.1, ::1 and each --host)")
    init.add_argument("--dir", metavar="DIR", help=f"where to write (default: {default_dir()})")
    init.add_argument("--host", action="append", default=[], metavar="NAME",
                      help="a DNS name or IP address clients use to reach the daemon "
                           "(repeatable)")
    init.add_argument("--days", type=int, default=SERVER_DAYS,
                      help="validity of the server certificate in days")
    init.add_argument("--force", action="store_true", help="replace existing files")
    client = actions.add_parser("client", help="create a client certificate (CN=NAME) signed "
                                "by the CA of `tls init`")
    client.add_argument("name", help="the client's identity (letters, digits, . _ @ -)")
    client.add_argument("--dir", metavar="DIR", help=f"the CA's folder (default: {default_dir()})")
    client.add_argument("--days", type=int, default=CLIENT_DAYS,
                        help="validity of the certificate in days")
    client.add_argument("--allow", action="append", default=[], metavar="DIR",
                        help="add a workspace folder (on the daemon's machine; a simple glob "
                             "like /srv/projects/* is allowed) for NAME to the daemon's "
                             "clients.json (repeatable)")
    client.add_argument("--force", action="store_true", help="replace existing files")


def cmd_tls(args: argparse.Namespace) -> None:
    if args.tls_action == "init":
        cmd_tls_init(args)
    else:
        cmd_tls_client(args)


def _folder(args: argparse.Namespace, create: bool) -> Path:
    """init makes the folder; client only uses the one init made."""
    return prepare_dir(Path(args.dir) if args.dir else default_dir(), create)


def cmd_tls_init(args: argparse.Namespace) -> None:
    hosts = ["localhost", "127.0.0.1", "::1", *[h.strip() for h in args.host if h.strip()]]
    try:
        folder = _folder(args, create=True)
        write_authority(folder, hosts, hosts[-1] if args.host else "localhost", args.days,
                        args.force)
    except TlsSetupError as exc:
        raise Failure(f"tls init: {exc}") from None
    print(f"wrote in {folder}:")
    print("  ca.key      the CA's private key (0600): keep it here, it signs client "
          "certificates")
    print("  ca.crt      the CA certificate: copy it to every client")
    print(f"  server.key  the daemon's private key (0600)\n  server.crt  the daemon's "
          f"certificate, for {', '.join(dict.fromkeys(hosts))}")
    print("  clients.json  which client may use which workspace (now: nobody)")
    print("\non the daemon's machine:")
    print(f"  memnestd --service --listen-tls 0.0.0.0:{DEFAULT_PORT} --tls-dir {folder}")
    print(f"  (or MEMNEST_TLS_LISTEN=0.0.0.0:{DEFAULT_PORT} MEMNEST_TLS_CERT={folder}/server.crt"
          f" MEMNEST_TLS_KEY={folder}/server.key MEMNEST_TLS_CA={folder}/ca.crt "
          f"MEMNEST_TLS_CLIENTS={clients_file(folder)})")
    print("\nthen a certificate for each client:\n  memnest-ctl tls client NAME --allow "
          f"/path/of/a/project{' --dir ' + str(folder) if args.dir else ''}")


def cmd_tls_client(args: argparse.Namespace) -> None:
    name = args.name.strip()
    try:
        check_client_name(name)
        folder = _folder(args, create=False)
        key_path, cert_path = write_client(folder, name, args.days, args.force)
        clients = clients_file(folder)
        allowed = allow(clients, name, args.allow) if args.allow else None
    except TlsSetupError as exc:
        raise Failure(f"tls client: {exc}") from None
    print(f"wrote {cert_path} (CN={name}, valid {args.days} days) and {key_path} (0600)")
    if allowed is not None:
        print(f"{clients}: {name} may use {', '.join(allowed)} (the daemon reads it at each "
              "call)")
    else:
        print(f"{name} may use no workspace yet: add it to {clients}, e.g. "
              f'{{"{name}": ["/srv/projects/app"]}}, or run this again with --allow DIR')
    print(f"\ncopy {folder / 'ca.crt'}, {cert_path} and {key_path} to the client (keep the key "
          "0600), and set there:")
    print("  MEMNEST_REMOTE=HOST:PORT   (a name or address in the server certificate)")
    print(f"  MEMNEST_TLS_CA={folder / 'ca.crt'}\n  MEMNEST_TLS_CERT={cert_path}\n"
          f"  MEMNEST_TLS_KEY={key_path}")
    print("  MEMORY_WORKSPACE=/path/of/the/project/on/the/daemon's/machine")


COMMANDS = (
    Command("tls", "make the certificates of a remote daemon (mutual TLS): tls init, tls client "
            "NAME", cmd_tls, "none", add_arguments),
)
