// Server.java: the TLS server of internal/keylogagent's tests, run as a
// single-file program:
//
//	java Server.java KEYSTORE.p12 PASSWORD
//
// It listens on an ephemeral port of 127.0.0.1 (TLS 1.2 and 1.3, the JDK's
// default JSSE), prints "listening PORT", echoes each line a client sends,
// and exits when its stdin closes (so that it never outlives the test).
import java.io.*;
import java.net.*;
import java.security.KeyStore;
import javax.net.ssl.*;

public class Server {
    public static void main(String[] args) throws Exception {
        char[] password = args[1].toCharArray();
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(args[0])) {
            ks.load(in, password);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, password);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(kmf.getKeyManagers(), null, null);
        SSLServerSocket ss = (SSLServerSocket) ctx.getServerSocketFactory()
                .createServerSocket(0, 50, InetAddress.getLoopbackAddress());

        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                }
            } catch (IOException e) {
            }
            System.exit(0);
        });
        stdin.setDaemon(true);
        stdin.start();

        System.out.println("listening " + ss.getLocalPort());
        System.out.flush();
        for (;;) {
            Socket s = ss.accept();
            Thread t = new Thread(() -> echo(s));
            t.setDaemon(true);
            t.start();
        }
    }

    static void echo(Socket s) {
        try (s;
             BufferedReader r = new BufferedReader(new InputStreamReader(s.getInputStream()));
             Writer w = new OutputStreamWriter(s.getOutputStream())) {
            for (String line; (line = r.readLine()) != null; ) {
                w.write(line + "\n");
                w.flush();
            }
        } catch (IOException e) {
            // the client went away
        }
    }
}
