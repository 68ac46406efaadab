/** The one-line explanation of a failure to listen on HOST:PORT at startup. */
export function describeListenFailure(error: NodeJS.ErrnoException, host: string, port: number): string {
  switch (error.code) {
    case 'EADDRINUSE':
      return `Port ${port} on ${host} is already in use by another process: stop it, or set PORT to a free port (PORT=0 picks one).`;
    case 'EACCES':
      return `No permission to listen on port ${port} on ${host}: ports below 1024 need privileges; set PORT to a higher port.`;
    case 'EADDRNOTAVAIL':
      return `Cannot listen on ${host}: it is not an address of this machine; set HOST (127.0.0.1 for this machine only, 0.0.0.0 for every interface).`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `Cannot listen on ${host}: the host name does not resolve; set HOST to an address of this machine.`;
    default:
      return `Cannot listen on ${host}:${port}: ${error.message}`;
  }
}
