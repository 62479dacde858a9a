import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;

class Salutation {
    static String of(String name) { return "Hello, " + name + "!"; }
}

public class Greeter {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String name = in.readLine();
        System.out.println(Salutation.of(name == null ? "world" : name.trim()));
    }
}
