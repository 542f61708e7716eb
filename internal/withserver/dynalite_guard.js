// Loaded with node --require before dynalite's command line. dynalite throws
// from a request's 'error' handler, so a client that closes a connection in
// the middle of a request (a Go context cancelled while its request is in
// flight) ends the whole server with "Error: aborted" (ECONNRESET). DynamoDB
// drops such a request and serves the others: so does the server here.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET') {
    return
  }
  console.error(err)
  process.exit(1)
})
